package convert

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

// TestMappingReproducesTestIDs converts train and test text in one run,
// then converts the test text alone with the saved mapping (through a
// file), and checks that every row has the same IDs.
func TestMappingReproducesTestIDs(t *testing.T) {
	train := writeTemp(t, "train.tsv", synthCriteo(500, 3))
	test := writeTemp(t, "test.tsv", synthCriteo(300, 4))
	for _, ids := range []string{Reindex, Hash} {
		t.Run(ids, func(t *testing.T) {
			out := t.TempDir()
			o := Options{Format: "criteo", Inputs: []string{train}, TestInputs: []string{test}, OutDir: out, IDs: ids}
			if ids == Hash {
				o.Rows = []int64{97}
			}
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			want := readConverted(t, res, out, "test")
			path := filepath.Join(t.TempDir(), MappingFile)
			if err := WriteMapping(path, res.Mapping); err != nil {
				t.Fatal(err)
			}
			m, err := ReadMapping(path)
			if err != nil {
				t.Fatal(err)
			}
			res2, got := convertT(t, Options{Format: "criteo", Inputs: []string{test}, Mapping: m})
			if !reflect.DeepEqual(got.sparse, want.sparse) || !reflect.DeepEqual(got.label, want.label) {
				t.Fatal("test text converted with the saved mapping has other IDs than in the first conversion")
			}
			for i := range res.Spec.Sparse {
				if res2.Spec.Sparse[i].Rows != res.Spec.Sparse[i].Rows {
					t.Fatalf("table %d has %d rows with the mapping; want %d", i, res2.Spec.Sparse[i].Rows, res.Spec.Sparse[i].Rows)
				}
			}
			if _, err := Run(context.Background(), Options{Format: "avazu", Inputs: []string{test}, OutDir: t.TempDir(), Mapping: m}); err == nil {
				t.Fatal("a criteo mapping converted avazu text")
			}
		})
	}
}
