package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/config"
)

// datasetFile is the name of the data config gen and convert write beside
// the data, which --data DIR picks up.
const datasetFile = "dataset.yaml"

// flagBinding ties a command's flag to a configuration key.
type flagBinding struct {
	flag, key string
}

// loadOptions says where a command's configuration comes from.
type loadOptions struct {
	// dataDir is the --data argument, if any: a directory with a
	// dataset.yaml is read as the first config file; otherwise the path
	// becomes data.train.
	dataDir string
	// bindings are the command's flags that set configuration keys.
	bindings []flagBinding
	// needData: the data section must validate.
	needData bool
}

// loadConfig builds the effective configuration: defaults, then config files
// in order, then PICASSO_* environment variables, then flags that were set.
func (g *globals) loadConfig(cmd *cobra.Command, lo loadOptions) (*config.Config, error) {
	v := viper.New()
	def := config.Default()
	defMap := map[string]any{}
	if err := mapstructure.Decode(def, &defMap); err != nil {
		return nil, fmt.Errorf("config: defaults: %w", err)
	}
	for k, val := range flatten("", structToMap(defMap)) {
		v.SetDefault(k, val)
	}
	for k, val := range g.defaults {
		v.SetDefault(k, val)
	}
	files := append([]string(nil), g.configs...)
	dirWithoutDataset := false // --data is a directory with no dataset.yaml
	if lo.dataDir != "" {
		if st, err := os.Stat(lo.dataDir); err != nil {
			return nil, usageErrorf("--data %s: %v", lo.dataDir, err)
		} else if st.IsDir() {
			if _, err := os.Stat(filepath.Join(lo.dataDir, datasetFile)); err == nil {
				files = append([]string{filepath.Join(lo.dataDir, datasetFile)}, files...)
			} else {
				dirWithoutDataset = true
			}
		}
	}
	for _, f := range files {
		m, err := readConfigFile(f)
		if err != nil {
			return nil, err
		}
		if err := v.MergeConfigMap(m); err != nil {
			return nil, usageErrorf("config %s: %v", f, err)
		}
	}
	v.SetEnvPrefix("PICASSO")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	for _, b := range lo.bindings {
		fl := cmd.Flags().Lookup(b.flag)
		if fl == nil {
			panic("cli: no flag " + b.flag)
		}
		if err := v.BindPFlag(b.key, fl); err != nil {
			return nil, err
		}
	}
	if lo.dataDir != "" && !v.InConfig("data.train") && v.GetString("data.train") == "" {
		abs, _ := filepath.Abs(lo.dataDir)
		v.Set("data.train", abs)
	}
	var c config.Config
	if err := v.UnmarshalExact(&c, viper.DecodeHook(configHooks())); err != nil {
		// Each file alone, to name the one that holds an unknown key or a
		// value of the wrong type (done only on failure: a decode costs a
		// tenth of a millisecond or more at every start).
		for _, f := range files {
			m, _ := readConfigFile(f) // read without error a moment ago
			fv := viper.New()
			_ = fv.MergeConfigMap(m)
			if ferr := fv.UnmarshalExact(&config.Config{}, viper.DecodeHook(configHooks())); ferr != nil {
				return nil, usageErrorf("config %s: %v", f, unwrapDecodeError(ferr))
			}
		}
		return nil, usageErrorf("config: %v%s", unwrapDecodeError(err), envSource(err))
	}
	var err error
	if lo.needData {
		err = c.Validate()
	} else {
		err = c.ValidateModel()
	}
	if err != nil {
		// What the data section's own checks cannot say: where the data
		// config was to come from.
		var dataHint string
		switch {
		case lo.needData && dirWithoutDataset &&
			!v.InConfig("data.sparse") && !v.InConfig("data.dense"):
			// A directory of splits without its data config: gen and convert
			// write dataset.yaml last, so an interrupted run leaves none.
			dataHint = fmt.Sprintf("--data %s has no %s: pass a directory written by picasso gen or convert (an interrupted one has none: run it again), or give the columns in a --config file", lo.dataDir, datasetFile)
		case lo.needData && lo.dataDir == "" && v.GetString("data.train") == "":
			dataHint = "--data is required: a dataset directory (with the dataset.yaml that picasso gen or convert writes) or a Parquet path; or set data in a --config file"
		}
		if dataHint != "" {
			return nil, fmt.Errorf("%w: %s (%s)", errUsage, dataHint, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return &c, nil
}

// configHooks are the conversions a configuration's values go through:
// strictNumbers first, then text (sizes such as 64MiB), then the lists an
// environment variable gives as "512,256,1".
func configHooks() mapstructure.DecodeHookFunc {
	return mapstructure.ComposeDecodeHookFunc(
		strictNumbers,
		mapstructure.TextUnmarshallerHookFunc(),
		intListHook,
		mapstructure.StringToSliceHookFunc(","),
	)
}

// decodeConfig decodes one file's settings m into c as loadConfig decodes
// them all: an unknown key, or a value of the wrong type, is an error.
func decodeConfig(m map[string]any, c *config.Config) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook: configHooks(), ErrorUnused: true, WeaklyTypedInput: true, Result: c,
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(m); err != nil {
		return unwrapDecodeError(err)
	}
	return nil
}

// strictNumbers refuses the conversions the decoder would otherwise make
// without a word: a fraction into a whole number (batch_size: 64.5 trained
// with 64), true or false into a number, and a single number into a list
// (bottom_mlp: 512 became [512]). PICASSO_* variables, which are text, are
// parsed as strictly by the decoder itself.
func strictNumbers(from, to reflect.Type, data any) (any, error) {
	switch to.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch x := data.(type) {
		case float64:
			if x != math.Trunc(x) {
				return nil, fmt.Errorf("is %v, not a whole number", x)
			}
		case bool:
			return nil, fmt.Errorf("is %v, not a number", x)
		}
	case reflect.Float32, reflect.Float64:
		if b, ok := data.(bool); ok {
			return nil, fmt.Errorf("is %v, not a number", b)
		}
	case reflect.Slice:
		switch from.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64, reflect.Bool:
			return nil, fmt.Errorf("is %v, not a list (write [%v])", data, data)
		}
	}
	return data, nil
}

// envSource names the PICASSO_* variable behind a decode error about a
// key, with its value, when one is set: "'train.batch_size' cannot parse
// value" did not say the value came from the environment.
func envSource(err error) string {
	for _, m := range quotedKey.FindAllStringSubmatch(err.Error(), -1) {
		name := envName(m[1])
		if val, ok := os.LookupEnv(name); ok {
			return fmt.Sprintf(" (from %s=%q)", name, val)
		}
	}
	return ""
}

// quotedKey finds the settings a decode error names ('train.batch_size').
var quotedKey = regexp.MustCompile(`'([a-z0-9_]+(?:\.[a-z0-9_]+)+)'`)

// intListHook decodes a string such as "512,256,1" or "[512, 256, 1]" (an
// environment variable's value, PICASSO_MODEL_DEEP_MLP=512,256,1) into a
// list of integers.
func intListHook(from, to reflect.Type, data any) (any, error) {
	str, ok := data.(string)
	if !ok || from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	switch to.Elem().Kind() {
	case reflect.Int, reflect.Int64:
	default:
		return data, nil
	}
	str = strings.Trim(strings.TrimSpace(str), "[]")
	out := []int64{}
	for _, f := range strings.FieldsFunc(str, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers", data)
		}
		out = append(out, n)
	}
	return out, nil
}

// unwrapDecodeError strips mapstructure's multi-line framing so the CLI
// prints one line per problem.
func unwrapDecodeError(err error) error {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	msg = strings.ReplaceAll(msg, "decoding failed due to the following error(s):; ; ", "")
	// mapstructure's "'train' has invalid keys: batch_sise" and, at the
	// top, "'' has invalid keys: trian".
	msg = strings.ReplaceAll(msg, "'' has invalid keys:", "unknown top-level key(s):")
	msg = invalidKeys.ReplaceAllString(msg, "unknown key(s) in $1:")
	// A setting's own error after mapstructure's "'train.mode' ": its
	// package prefix and sentinel said again ("'train.mode' train: mode
	// \"fea\" is not one of [...]: train: invalid options").
	msg = settingPrefix.ReplaceAllString(msg, "'$1': ")
	msg = invalidOptions.ReplaceAllString(msg, "")
	return errors.New(msg)
}

// invalidOptions finds a setting's sentinel said after its message
// (": train: invalid options", ": compute: invalid options").
var invalidOptions = regexp.MustCompile(`(: [a-z]+)?: invalid options`)

// settingPrefix finds "'KEY' PACKAGE: " in a decode error.
var settingPrefix = regexp.MustCompile(`'([a-z0-9_.]+)' [a-z]+: `)

// invalidKeys finds mapstructure's "'SECTION' has invalid keys:".
var invalidKeys = regexp.MustCompile(`'([^']+)' has invalid keys:`)

// readConfigFile reads one YAML file, resolving data.train, data.valid and
// data.test against the file's directory.
func readConfigFile(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("config: %v", err)
	}
	var m map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil && err.Error() != "EOF" {
		return nil, usageErrorf("config %s: %v", path, err)
	}
	if m == nil {
		m = map[string]any{}
	}
	if d, ok := m["data"].(map[string]any); ok {
		for _, k := range []string{"train", "test", "valid"} {
			if p, ok := d[k].(string); ok && p != "" && !filepath.IsAbs(p) {
				d[k] = filepath.Join(filepath.Dir(path), p)
			}
		}
	}
	return m, nil
}

// structToMap turns the result of mapstructure.Decode (which leaves nested
// structs as structs) into nested maps.
func structToMap(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, val := range m {
		rv := reflect.ValueOf(val)
		if rv.Kind() == reflect.Struct {
			sub := map[string]any{}
			if err := mapstructure.Decode(val, &sub); err == nil {
				out[k] = structToMap(sub)
				continue
			}
		}
		out[k] = val
	}
	return out
}

// flatten turns nested maps into dotted keys.
func flatten(prefix string, m map[string]any) map[string]any {
	out := map[string]any{}
	for k, val := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := val.(map[string]any); ok {
			for k2, v2 := range flatten(key, sub) {
				out[k2] = v2
			}
			continue
		}
		out[key] = val
	}
	return out
}

// configYAML renders a configuration as YAML.
func configYAML(c *config.Config) ([]byte, error) { return configYAMLOf(c) }

func configYAMLOf(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeConfig saves the effective configuration (a run's record of what it used).
func writeConfig(path string, c *config.Config) error {
	b, err := configYAML(c)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

type configShowOptions struct {
	data   string
	asJSON bool
}

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect picasso's configuration",
	}
	opts := &configShowOptions{}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration (defaults, --config files, PICASSO_* environment, flags)",
		Example: `  picasso config show --config data/dataset.yaml --config configs/rmc2-kaggle.yaml
  PICASSO_TRAIN_BATCH_SIZE=128 picasso config show --data data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.loadConfig(cmd, loadOptions{dataDir: opts.data})
			if err != nil {
				return err
			}
			if opts.asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(c)
			}
			b, err := configYAML(c)
			if err != nil {
				return err
			}
			_, err = g.stdout.Write(b)
			return err
		},
	}
	show.Flags().StringVar(&opts.data, "data", "", "dataset directory (its dataset.yaml is read first) or Parquet path")
	show.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON instead of YAML")
	cmd.AddCommand(show)
	return cmd
}

var _ pflag.Value = (*config.ByteSize)(nil)
