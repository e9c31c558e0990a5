package convert

import (
	"bufio"
	"bytes"
	"errors"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Seed lines that do not depend on shared/ (one each of the samples, and
// edge cases).
var (
	criteoSeedTSV = []string{
		"1\t5\t110\t\t16\t\t1\t0\t14\t7\t1\t\t306\t\t62770d79\te21f5d58\tafea442f\t945c7fcf\t38b02748\t6fcd6dcb\t3580aa21\t28808903\t46dedfa6\t2e027dc1\t0c7c4231\t95981d1f\t00c5ffb7\tbe4ee537\t8a0b74cc\t4cdc3efa\td20856aa\tb8170bba\t9512c20b\tc38e2f28\t14f65a5d\t25b1b089\td7c1fc0b\t7caf609c\t30436bfc\ted10571d",
		"0\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t",
		"1\t-1\t1e3\t2.5\t-0\t+7\t.5\t5.\t0\t0\t0\t0\t0\t0\t0\tffffffffffffffff\tABCDEF01\t1\t2\t3\t4\t5\t6\t7\t8\t9\ta\tb\tc\td\te\tf\t10\t11\t12\t13\t14\t15\t16\t17",
		"", "1", "0\t1", "2\t",
		"0.00000000000000000000000\t0.00000000000000000000000",
	}
	criteoSeedCSV = []string{
		"0,,3,260.0,,17668.0,,,33.0,,,,0.0,,05db9164,08d6d899,9143c832,f56b7dd5,25c83c98,7e0ccccf,df5c2d18,0b153874,a73ee510,8f48ce11,a7b606c4,ae1bb660,eae197fd,b28479f6,bfef54b3,bad5ee18,e5ba7672,87c6f83c,,,0429f84b,,3a171ecb,c0d61a5c,,",
		"label,I1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13,C1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,C12,C13,C14,C15,C16,C17,C18,C19,C20,C21,C22,C23,C24,C25,C26",
	}
	avazuSeed = []string{
		"1000009418151094273,0,14102100,1005,0,1fbe01fe,f3845767,28905ebd,ecad2386,7801e8d9,07d7df22,a99f214a,ddd2926e,44956a24,1,2,15706,320,50,1722,0,35,-1,79",
		"id,click,hour,C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,app_category,device_id,device_ip,device_model,device_type,device_conn_type,C14,C15,C16,C17,C18,C19,C20,C21",
		"1,1,16022923,,,,,,,,,,,,,,,,,,,,,",
		"1,1,15022923,\"a,b\",,,,,,,,,,,,,,,,,,,,",
		",.00000000000000000000000",
	}
)

// sampleLines returns up to n lines of a shared sample (none when absent).
func sampleLines(name string, n int) []string {
	f, err := os.Open(filepath.Join(sharedData, name))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < n {
		out = append(out, sc.Text())
	}
	return out
}

func FuzzParseCriteoLine(f *testing.F) {
	for _, l := range append(criteoSeedTSV, sampleLines("criteo-1tb-head1000.tsv", 20)...) {
		f.Add([]byte(l), false)
	}
	for _, l := range append(criteoSeedCSV, sampleLines("criteo-kaggle-sample200.csv", 20)...) {
		f.Add([]byte(l), true)
	}
	if hand, err := os.ReadFile("testdata/criteo-hand.tsv"); err == nil {
		for _, l := range bytes.Split(hand, []byte{'\n'}) {
			f.Add(bytes.TrimSuffix(l, []byte{'\r'}), false)
		}
	}
	f.Fuzz(func(t *testing.T, line []byte, comma bool) {
		sep := byte('\t')
		if comma {
			sep = ','
		}
		lay := criteoDefaultLayout(sep)
		row := newParsedRow(13, 26)
		err := parseLine(line, lay, row)
		if err != nil {
			var fe *fieldError
			if !errors.As(err, &fe) || fe.Field < 0 || fe.Field > len(lay.cols)+1 {
				t.Fatalf("parseLine(%q) = %v; want a fieldError with a field in [0, 41]", line, err)
			}
			if fe.Field >= 1 && fe.Field <= len(lay.cols) && fe.Name != lay.cols[fe.Field-1].name {
				t.Fatalf("error names field %d %q; the layout says %q", fe.Field, fe.Name, lay.cols[fe.Field-1].name)
			}
			return
		}
		fields := bytes.Split(line, []byte{sep})
		if len(fields) != 40 {
			t.Fatalf("accepted a line of %d fields", len(fields))
		}
		if row.Label != 0 && row.Label != 1 {
			t.Fatalf("label %v", row.Label)
		}
		for d := range 13 {
			v, fld := row.Dense[d], fields[1+d]
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 {
				t.Fatalf("I%d = %v from %q", d+1, v, fld)
			}
			want := float32(0)
			if len(fld) > 0 {
				x, err := strconv.ParseFloat(string(fld), 64)
				if err != nil {
					t.Fatalf("I%d: accepted %q, which strconv rejects: %v", d+1, fld, err)
				}
				want = float32(math.Log1p(math.Max(x, 0)))
			}
			if v != want {
				t.Fatalf("I%d = %v from %q; want %v", d+1, v, fld, want)
			}
		}
		for s := range 26 {
			fld := fields[14+s]
			if row.Missing[s] != (len(fld) == 0) {
				t.Fatalf("C%d missing = %v for %q", s+1, row.Missing[s], fld)
			}
			if len(fld) > 0 {
				v, err := strconv.ParseUint(string(fld), 16, 64)
				if err != nil || v != row.Cat[s] {
					t.Fatalf("C%d = %x from %q (strconv: %x, %v)", s+1, row.Cat[s], fld, v, err)
				}
				for _, rows := range []int64{2, 3, 1000, 1 << 40} {
					if id, _ := hashRow(v, rows); id < 1 || id >= rows {
						t.Fatalf("hashed %x into row %d of [1, %d)", v, id, rows)
					}
				}
			}
		}
	})
}

func FuzzParseAvazuLine(f *testing.F) {
	for _, l := range append(avazuSeed, sampleLines("avazu-sample100.csv", 20)...) {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		lay := avazuDefaultLayout()
		row := newParsedRow(2, 21)
		err := parseLine(line, lay, row)
		if err != nil {
			var fe *fieldError
			if !errors.As(err, &fe) || fe.Field < 0 || fe.Field > len(lay.cols)+1 {
				t.Fatalf("parseLine(%q) = %v; want a fieldError with a field in [0, 25]", line, err)
			}
			return
		}
		fields := bytes.Split(line, []byte{','})
		if len(fields) != 24 {
			t.Fatalf("accepted a line of %d fields", len(fields))
		}
		if row.Label != 0 && row.Label != 1 {
			t.Fatalf("label %v", row.Label)
		}
		for d, v := range row.Dense {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("%s = %v from %q", avazuDense[d], v, fields[2])
			}
		}
		for s := range 21 {
			fld := fields[3+s]
			if row.Missing[s] != (len(fld) == 0) {
				t.Fatalf("%s missing = %v for %q", avazuSparse[s], row.Missing[s], fld)
			}
			if len(fld) > 0 {
				h := fnv.New64a()
				h.Write(fld)
				if h.Sum64() != row.Cat[s] {
					t.Fatalf("%s = %x from %q; want FNV-1a %x", avazuSparse[s], row.Cat[s], fld, h.Sum64())
				}
			}
		}
	})
}

// checkLayout asserts that a layout maps each of the format's columns exactly once.
func checkLayout(t *testing.T, lay *layout, nDense, nSparse int) {
	t.Helper()
	var labels int
	dense := make([]int, nDense)
	sparse := make([]int, nSparse)
	for _, c := range lay.cols {
		switch c.kind {
		case colLabel:
			labels++
		case colInt:
			dense[c.idx]++
		case colHour:
			dense[0]++
			dense[1]++
		case colHex, colStr:
			sparse[c.idx]++
		}
	}
	if labels != 1 {
		t.Fatalf("layout has %d labels", labels)
	}
	for i, n := range dense {
		if n != 1 {
			t.Fatalf("dense column %d mapped %d times", i, n)
		}
	}
	for i, n := range sparse {
		if n != 1 {
			t.Fatalf("sparse column %d mapped %d times", i, n)
		}
	}
}

// FuzzDetectHeader covers the first-line path of both formats: header or
// data, any column order.
func FuzzDetectHeader(f *testing.F) {
	for _, l := range append(append(criteoSeedTSV, criteoSeedCSV...), avazuSeed...) {
		f.Add([]byte(l))
	}
	f.Add([]byte("C26,label,I13,I12,I11,I10,I9,I8,I7,I6,I5,I4,I3,I2,I1,C1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,C12,C13,C14,C15,C16,C17,C18,C19,C20,C21,C22,C23,C24,C25"))
	f.Add([]byte("\"label\",\"I1\""))
	f.Fuzz(func(t *testing.T, first []byte) {
		if lay, err := detectCriteo(first); err == nil {
			checkLayout(t, lay, 13, 26)
		} else if _, ok := err.(*fieldError); !ok {
			t.Fatalf("detectCriteo error %T", err)
		}
		if lay, err := detectAvazu(first); err == nil {
			checkLayout(t, lay, 2, 21)
		} else if _, ok := err.(*fieldError); !ok {
			t.Fatalf("detectAvazu error %T", err)
		}
	})
}
