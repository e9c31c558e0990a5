package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/picasso-ctr/picasso/pkg/config"
)

// envPrefix starts every environment variable picasso reads.
const envPrefix = "PICASSO_"

// libraryEnv are the PICASSO_* variables that are not settings: the paths
// of the libraries pkg/cuda loads.
var libraryEnv = []string{"PICASSO_LIBCUDA", "PICASSO_LIBNVRTC", "PICASSO_LIBCUBLAS"}

// settingEnv returns the environment variable of every configuration key
// (train.batch_size: PICASSO_TRAIN_BATCH_SIZE).
func settingEnv() map[string]string {
	defMap := map[string]any{}
	_ = mapstructure.Decode(config.Default(), &defMap)
	out := map[string]string{}
	for k := range flatten("", structToMap(defMap)) {
		out[envName(k)] = k
	}
	return out
}

// envName is the environment variable of a configuration key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// checkEnv reports a PICASSO_* variable in environ that names no setting:
// viper would ignore it silently, as it would a misspelled key.
func checkEnv(environ []string) error {
	known := settingEnv()
	libs := map[string]string{}
	for _, l := range libraryEnv {
		libs[l] = "a library's path"
	}
	var bad []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || slices.Contains(libraryEnv, name) {
			continue
		}
		if _, ok := known[name]; ok {
			continue
		}
		msg := name + " is not a picasso setting"
		if near := nearestEnv(name, libs); near != "" && editDistance(near, name) <= 2 {
			msg += fmt.Sprintf(" (did you mean %s, which names %s?)", near, libs[near])
		} else if near := nearestEnv(name, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s, which sets %s?)", near, known[near])
		}
		bad = append(bad, msg)
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return usageErrorf("environment: %s; 'picasso config show --json' lists the settings, PICASSO_ and the key in capitals with _ for . (train.batch_size: PICASSO_TRAIN_BATCH_SIZE)", strings.Join(bad, "; "))
}

// nearestEnv returns the known variable closest to name: the same letters
// but for underscores, or the one at the smallest edit distance (at most 3).
func nearestEnv(name string, known map[string]string) string {
	squash := func(s string) string { return strings.ReplaceAll(s, "_", "") }
	best, bestD := "", 4
	for k := range known {
		if squash(k) == squash(name) {
			return k
		}
		if d := editDistance(k, name); d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
