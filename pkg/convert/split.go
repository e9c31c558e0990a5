package convert

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The parts a conversion's rows can be split into, in time order.
const (
	PartTrain = "train"
	PartValid = "valid"
	PartTest  = "test"
)

// partNames are the parts in output (and time) order; a part's index here is
// its index in the converter's writers.
var partNames = [3]string{PartTrain, PartValid, PartTest}

const (
	partTrain = iota
	partValid
	partTest
)

// SplitPart is one part of a split and the fraction of the rows it gets.
type SplitPart struct {
	Name     string  // PartTrain, PartValid or PartTest
	Fraction float64 // in (0, 1]; the parts' fractions sum to 1
}

// ParseSplit reads "train=0.8,valid=0.1,test=0.1": each part once, in any
// order, train required, fractions in (0, 1] summing to 1 (within 1e-6).
func ParseSplit(s string) ([]SplitPart, error) {
	var parts []SplitPart
	for item := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("convert: split %q: item %q is not NAME=FRACTION: %w", s, item, ErrSplit)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("convert: split %q: fraction %q of %s is not a number: %w", s, val, name, ErrSplit)
		}
		parts = append(parts, SplitPart{Name: strings.TrimSpace(name), Fraction: f})
	}
	if err := checkSplit(parts); err != nil {
		return nil, fmt.Errorf("convert: split %q: %w", s, err)
	}
	return parts, nil
}

// checkSplit reports the first problem of a split.
func checkSplit(parts []SplitPart) error {
	seen := map[string]bool{}
	sum := 0.0
	for _, p := range parts {
		if !slices.Contains(partNames[:], p.Name) {
			return fmt.Errorf("unknown part %q (want train, valid or test): %w", p.Name, ErrSplit)
		}
		if seen[p.Name] {
			return fmt.Errorf("part %s given twice: %w", p.Name, ErrSplit)
		}
		seen[p.Name] = true
		if !(p.Fraction > 0 && p.Fraction <= 1) {
			return fmt.Errorf("part %s: fraction %v is not in (0, 1]: %w", p.Name, p.Fraction, ErrSplit)
		}
		sum += p.Fraction
	}
	if !seen[PartTrain] {
		return fmt.Errorf("no train part: %w", ErrSplit)
	}
	if math.Abs(sum-1) > 1e-6 {
		return fmt.Errorf("fractions sum to %v, want 1: %w", sum, ErrSplit)
	}
	return nil
}

// splitter assigns each row a part. Every row gets a position p in [0, 1)
// and goes to the first part whose cumulative fraction exceeds p.
//
// By hash: p is a seeded hash of the row's text, so a row's part depends on
// its content and the seed only (equal lines go to the same part), and the
// parts get their fractions of the rows in expectation.
//
// By time: p is the row's rank in time order divided by the number of rows,
// so the earliest rows go to train and the latest to test. Rows with equal
// times share a range of ranks and take their place in it by the same hash,
// so ties are cut at random rather than by input order; the rank comes from
// the sorted times of a first pass (8 bytes per row while sorting, then one
// entry per distinct time).
type splitter struct {
	cum  [3]float64 // cumulative fractions of train, valid, test
	last int        // the last part with a non-zero fraction
	seed uint64     // mixed seed

	byTime bool
	times  []int64 // distinct times, ascending (after finishTimes)
	before []int64 // rows with a time below times[i]
	equal  []int64 // rows with time times[i]
	n      int64   // rows in all
}

func newSplitter(parts []SplitPart, seed uint64, byTime bool) *splitter {
	s := &splitter{seed: mix64(seed ^ 0x5b1e5eed), byTime: byTime}
	var frac [3]float64
	for _, p := range parts {
		i := slices.Index(partNames[:], p.Name)
		frac[i] = p.Fraction
	}
	acc := 0.0
	for i, f := range frac {
		acc += f
		s.cum[i] = acc
		if f > 0 {
			s.last = i
		}
	}
	return s
}

// has reports whether part i gets rows.
func (s *splitter) has(i int) bool {
	lo := 0.0
	if i > 0 {
		lo = s.cum[i-1]
	}
	return s.cum[i] > lo
}

// finishTimes turns the times of every row, in any order, into the rank table.
func (s *splitter) finishTimes(all []int64) {
	slices.Sort(all)
	s.n = int64(len(all))
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j] == all[i] {
			j++
		}
		s.times = append(s.times, all[i])
		s.before = append(s.before, int64(i))
		s.equal = append(s.equal, int64(j-i))
		i = j
	}
}

// rowHash is the row's hash as a fraction in [0, 1).
func (s *splitter) rowHash(line []byte) float64 {
	return float64(mix64(fnv1a(line)^s.seed)>>11) / (1 << 53)
}

// part returns the part of a row given its text and time.
func (s *splitter) part(line []byte, t int64) int {
	p := s.rowHash(line)
	if s.byTime && s.n > 0 {
		i, found := slices.BinarySearch(s.times, t)
		switch {
		case found:
			p = (float64(s.before[i]) + p*float64(s.equal[i])) / float64(s.n)
		case i < len(s.times):
			p = float64(s.before[i]) / float64(s.n)
		default:
			p = 1
		}
	}
	for i, c := range s.cum {
		if p < c {
			return i
		}
	}
	return s.last
}
