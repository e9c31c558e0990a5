package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes that reads and prints as "512MiB", "1.5GB",
// "4096" (plain bytes). Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB,
// TB) units are accepted; "K", "M", "G" mean binary units.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
	{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
	{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10},
	{"b", 1},
}

// ParseByteSize parses s as described on ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("config: empty byte size")
	}
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("config: byte size %q: want a non-negative number with an optional unit such as 512MiB", s)
	}
	return ByteSize(v*mult + 0.5), nil
}

// UnmarshalText lets YAML, environment and flags use "512MiB".
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText prints the size with the largest binary unit that divides it.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

func (b ByteSize) String() string {
	v := int64(b)
	for _, u := range []struct {
		s string
		m int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v != 0 && v%u.m == 0 {
			return fmt.Sprintf("%d%s", v/u.m, u.s)
		}
	}
	return strconv.FormatInt(v, 10)
}

// Set and Type make ByteSize a pflag.Value.
func (b *ByteSize) Set(s string) error { return b.UnmarshalText([]byte(s)) }

// Type names the flag's value in help text.
func (b *ByteSize) Type() string { return "bytes" }
