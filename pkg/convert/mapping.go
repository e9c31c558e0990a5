package convert

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// MappingFile is the name of the ID mapping that the CLI writes beside a
// converted dataset and that train copies into its run, so that raw text
// can later be scored with the IDs the model was trained on.
const MappingFile = "ids.json"

// Mapping is how a conversion turned categorical values into table rows.
// Run with Options.Mapping set converts new text with exactly these IDs.
type Mapping struct {
	// Format is "criteo", "avazu" or "csv"; IDs is Hash or Reindex.
	Format string `json:"format"`
	IDs    string `json:"ids"`
	// Rows is each table's row count (hash: the buckets).
	Rows []int64 `json:"rows"`
	// Vocab (reindex only) lists, per table, the parsed values that have an
	// ID of their own, in ID order: Vocab[t][k] has ID 2+k. Values not
	// listed get the shared ID 1, missing values ID 0. A value is the
	// 64-bit key the parser makes of a field: the hexadecimal number of a
	// Criteo category, the hexadecimal or hashed string of an Avazu field.
	Vocab [][]uint64 `json:"vocab,omitempty"`
	// Columns (csv) are the column roles of the conversion; a conversion
	// with this mapping and no Options.Columns uses them.
	Columns *Columns `json:"columns,omitempty"`
	// Standardize (csv) is the mean and standard deviation each
	// standardized dense column was scaled with, in column order.
	Standardize []DenseStats `json:"standardize,omitempty"`
}

// mapping returns the converter's mapping, once its IDs are fixed.
func (c *converter) mapping() *Mapping {
	m := &Mapping{Format: c.f.name, IDs: c.opts.IDs, Columns: c.opts.columns(), Standardize: c.norm}
	if c.vocabs == nil {
		m.Rows = append([]int64(nil), c.rows...)
		return m
	}
	for _, v := range c.vocabs {
		m.Rows = append(m.Rows, v.rows)
		vals := make([]uint64, v.rows-reindexFirst)
		for x, id := range v.ids {
			vals[id-reindexFirst] = x
		}
		m.Vocab = append(m.Vocab, vals)
	}
	return m
}

// useMapping fixes the converter's IDs to m's.
func (c *converter) useMapping(m *Mapping) error {
	ns := c.f.tables()
	if m.Format != c.f.name || len(m.Rows) != ns {
		return fmt.Errorf("convert: the ID mapping is for %s with %d tables; this conversion is %s with %d", m.Format, len(m.Rows), c.f.name, ns)
	}
	if len(m.Standardize) > 0 {
		if len(m.Standardize) != len(c.f.standardize) {
			return fmt.Errorf("convert: the ID mapping standardizes %d dense columns; this conversion %d", len(m.Standardize), len(c.f.standardize))
		}
		for k, d := range c.f.standardize {
			if st := m.Standardize[k]; st.Name != c.f.dense[d] || !(st.Std > 0) {
				return fmt.Errorf("convert: the ID mapping standardizes %s (std %g) where this conversion standardizes %s", st.Name, st.Std, c.f.dense[d])
			}
		}
		c.norm = m.Standardize
	}
	switch m.IDs {
	case Hash:
		c.rows = append([]int64(nil), m.Rows...)
		return nil
	case Reindex:
		if len(m.Vocab) != ns {
			return fmt.Errorf("convert: the reindex mapping has %d vocabularies for %d tables", len(m.Vocab), ns)
		}
		c.rows = nil
		c.vocabs = make([]*vocab, ns)
		for t, vals := range m.Vocab {
			if int64(len(vals))+reindexFirst != m.Rows[t] {
				return fmt.Errorf("convert: mapping table %d: %d values for %d rows", t, len(vals), m.Rows[t])
			}
			v := &vocab{ids: make(map[uint64]uint32, len(vals)), rows: m.Rows[t]}
			for k, x := range vals {
				v.ids[x] = uint32(k + reindexFirst)
			}
			c.vocabs[t] = v
		}
		return nil
	}
	return fmt.Errorf("convert: mapping ids %q: want %s or %s", m.IDs, Hash, Reindex)
}

// WriteMapping writes m to path as JSON.
func WriteMapping(path string, m *Mapping) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

// ReadMapping reads a mapping WriteMapping wrote.
func ReadMapping(path string) (*Mapping, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("convert: read ID mapping: %w", err)
	}
	var m Mapping
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("convert: ID mapping %s: %w", path, err)
	}
	return &m, nil
}
