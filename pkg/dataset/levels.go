package dataset

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// The level path: columns of any shape picasso reads (nullable, lists,
// narrow or unsigned integers, doubles, booleans) decoded from their
// column chunks with their definition and repetition levels. The direct
// and plain paths (reader.go, plain.go) take the required flat columns
// picasso writes; this one takes every file that other tools write.

// colKind is what a column's values are, as picasso reads them.
type colKind uint8

const (
	kindOther colKind = iota // anything picasso does not read: strings, dates, decimals, structs
	kindInt                  // INT32 or INT64, signed or unsigned
	kindFloat                // FLOAT or DOUBLE
	kindBool                 // BOOLEAN
)

// colType is a top-level column of a file as picasso reads it: the leaf
// that holds its values, their kind and width, and its levels.
type colType struct {
	leaf     int
	kind     colKind
	bits     int  // of an integer: 8, 16, 32 or 64
	unsigned bool // of an integer
	phys     parquet.Type
	list     bool  // a list of values a row (one repeated level)
	maxDef   int16 // the leaf's definition level when a value is present
	maxRep   int16
	listDef  int16  // of a list: the definition level of a present, empty list
	desc     string // the type, for errors: int64, list<int32>, BYTE_ARRAY (String)
}

// numeric reports whether c holds one number a row (a label, dense value
// or p_true).
func (c colType) numeric() bool { return !c.list && c.kind != kindOther }

// ids reports whether c holds one integer a row (a one-hot feature's IDs).
func (c colType) ids() bool { return !c.list && c.kind == kindInt }

// idLists reports whether c holds a list of integers a row (a multi-hot
// feature's IDs).
func (c colType) idLists() bool { return c.list && c.kind == kindInt }

// lookupColumn returns the top-level column name of psc (the first of that
// name), or false when there is none.
func lookupColumn(psc *schema.Schema, name string) (colType, bool) {
	root := psc.Root()
	i := root.FieldIndexByName(name)
	if i < 0 {
		return colType{}, false
	}
	top := root.Field(i)
	// A list is a repeated leaf, or a LIST group over one repeated node
	// that is the leaf (the two-level lists older writers made) or holds
	// it and nothing else (the three-level list of the Parquet spec).
	// Other groups (structs, maps, lists of structs) are types picasso
	// does not read.
	n := top
	g, isGroup := top.(*schema.GroupNode)
	if isGroup {
		_, isList := g.LogicalType().(schema.ListLogicalType)
		isList = isList || g.ConvertedType() == schema.ConvertedTypes.List
		if !isList || g.NumFields() != 1 || g.RepetitionType() == parquet.Repetitions.Repeated ||
			g.Field(0).RepetitionType() != parquet.Repetitions.Repeated {
			return colType{leaf: -1, desc: "struct"}, true
		}
		n = g.Field(0)
		if inner, ok := n.(*schema.GroupNode); ok {
			if inner.NumFields() != 1 {
				return colType{leaf: -1, desc: "list<struct>"}, true
			}
			n = inner.Field(0)
			if _, ok := n.(*schema.PrimitiveNode); !ok || n.RepetitionType() == parquet.Repetitions.Repeated {
				return colType{leaf: -1, desc: "list<struct>"}, true
			}
		}
	}
	leaf := n.(*schema.PrimitiveNode)
	c := colType{leaf: psc.ColumnIndexByNode(leaf), phys: leaf.PhysicalType()}
	col := psc.Column(c.leaf)
	c.maxDef, c.maxRep = col.MaxDefinitionLevel(), col.MaxRepetitionLevel()
	c.kind, c.bits, c.unsigned, c.desc = leafKind(leaf)
	if isGroup {
		c.list = true
		if top.RepetitionType() == parquet.Repetitions.Optional {
			c.listDef = 1
		}
	} else if top.RepetitionType() == parquet.Repetitions.Repeated {
		c.list = true // a bare repeated leaf: never null, maybe empty
	}
	if c.list {
		c.desc = "list<" + c.desc + ">"
	}
	return c, true
}

// leafKind returns what leaf's values are.
func leafKind(leaf *schema.PrimitiveNode) (kind colKind, bits int, unsigned bool, desc string) {
	lt := leaf.LogicalType()
	plain := lt == nil || lt.Equals(schema.NoLogicalType{})
	it, isInt := lt.(*schema.IntLogicalType)
	if !isInt {
		if v, ok := lt.(schema.IntLogicalType); ok {
			it, isInt = &v, true
		}
	}
	switch pt := leaf.PhysicalType(); {
	case (pt == parquet.Types.Int32 || pt == parquet.Types.Int64) && (plain || isInt):
		bits = 32
		if pt == parquet.Types.Int64 {
			bits = 64
		}
		if isInt {
			bits, unsigned = int(it.BitWidth()), !it.IsSigned()
		}
		desc = fmt.Sprintf("int%d", bits)
		if unsigned {
			desc = "u" + desc
		}
		return kindInt, bits, unsigned, desc
	case pt == parquet.Types.Float && plain:
		return kindFloat, 32, false, "float32"
	case pt == parquet.Types.Double && plain:
		return kindFloat, 64, false, "float64"
	case pt == parquet.Types.Boolean && plain:
		return kindBool, 1, false, "bool"
	case plain:
		return kindOther, 0, false, strings.ToUpper(pt.String())
	default:
		return kindOther, 0, false, fmt.Sprintf("%s (%s)", strings.ToUpper(pt.String()), lt)
	}
}

// levelCol is one column of a row group open on the level path: its
// reader and the levels and values read but not yet taken, from lvl and
// val on.
type levelCol struct {
	colType
	name   string
	role   byte // as directCol's
	i      int
	cr     file.ColumnChunkReader
	def    []int16   // nil when maxDef is 0 (every level a value)
	rep    []int16   // nil when maxRep is 0 (every level a row)
	nlev   int       // levels buffered
	ivals  []int64   // values of an integer column
	fvals  []float64 // of a float or boolean column
	lvl    int       // the next level to take
	val    int       // the next value to take
	starts int       // rows that start at lvl or after (see whole)
	done   bool      // the chunk has no more levels
	i32    []int32   // scratch for the typed readers
	f32    []float32
	b      []bool
}

// errShortColumn is returned by fill when a chunk ends before the rows
// asked for.
var errShortColumn = errors.New("short column")

// whole returns the number of whole rows buffered from lvl on: a row of a
// list is whole once the next one starts, or the chunk ends.
func (c *levelCol) whole() int {
	if c.maxRep == 0 || c.done || c.starts == 0 {
		return c.starts
	}
	return c.starts - 1
}

// fill reads levels until n whole rows are buffered from lvl on, or the
// chunk ends (then errShortColumn).
func (c *levelCol) fill(n int) error {
	c.compact()
	for c.whole() < n && !c.done {
		k := max(n-c.whole(), 1024)
		l := c.nlev
		var def, rep []int16
		if c.maxDef > 0 {
			c.def = slices.Grow(c.def[:l], k)[:l+k]
			def = c.def[l:]
		}
		if c.maxRep > 0 {
			c.rep = slices.Grow(c.rep[:l], k)[:l+k]
			rep = c.rep[l:]
		}
		got, err := c.read(k, def, rep)
		if err == nil {
			// The library records a page it cannot read (a corrupt
			// header, a short page) and goes on with the next one:
			// without this, the rows after it would shift silently.
			err = c.cr.Err()
		}
		if err != nil {
			return err
		}
		if got == 0 {
			c.done = true
		}
		c.nlev += got
		if c.maxRep == 0 {
			c.starts += got
			continue
		}
		for _, r := range c.rep[l:c.nlev] {
			if r == 0 {
				c.starts++
			}
		}
	}
	if c.whole() < n {
		return errShortColumn
	}
	return nil
}

// compact moves the levels and values not yet taken to the front.
func (c *levelCol) compact() {
	if c.lvl == 0 && c.val == 0 {
		return
	}
	if c.def != nil {
		c.def = append(c.def[:0], c.def[c.lvl:c.nlev]...)
	}
	if c.rep != nil {
		c.rep = append(c.rep[:0], c.rep[c.lvl:c.nlev]...)
	}
	if c.kind == kindInt {
		c.ivals = append(c.ivals[:0], c.ivals[c.val:]...)
	} else {
		c.fvals = append(c.fvals[:0], c.fvals[c.val:]...)
	}
	c.nlev -= c.lvl
	c.lvl, c.val = 0, 0
}

// read reads up to k levels into def and rep (when not nil), appending
// their values, and returns the number of levels read.
func (c *levelCol) read(k int, def, rep []int16) (int, error) {
	var lv int64
	var nv int
	var err error
	switch cr := c.cr.(type) {
	case *file.Int64ColumnChunkReader:
		lv, nv, err = readBatch(cr, &c.ivals, k, def, rep)
	case *file.Int32ColumnChunkReader:
		c.i32 = c.i32[:0]
		lv, nv, err = readBatch(cr, &c.i32, k, def, rep)
		for _, v := range c.i32 {
			if c.unsigned {
				c.ivals = append(c.ivals, int64(uint32(v)))
			} else {
				c.ivals = append(c.ivals, int64(v))
			}
		}
	case *file.Float32ColumnChunkReader:
		c.f32 = c.f32[:0]
		lv, nv, err = readBatch(cr, &c.f32, k, def, rep)
		for _, v := range c.f32 {
			c.fvals = append(c.fvals, float64(v))
		}
	case *file.Float64ColumnChunkReader:
		lv, nv, err = readBatch(cr, &c.fvals, k, def, rep)
	case *file.BooleanColumnChunkReader:
		c.b = c.b[:0]
		lv, nv, err = readBatch(cr, &c.b, k, def, rep)
		for _, v := range c.b {
			f := 0.0
			if v {
				f = 1
			}
			c.fvals = append(c.fvals, f)
		}
	default:
		return 0, fmt.Errorf("unexpected column reader %T", c.cr)
	}
	if err != nil {
		return 0, err
	}
	if lv < 0 || lv > int64(k) || nv < 0 || nv > int(lv) {
		return 0, fmt.Errorf("%d levels and %d values read of %d", lv, nv, k)
	}
	return int(lv), nil
}

// batchReader is a typed column chunk reader's ReadBatch.
type batchReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
}

// readBatch reads up to k levels of r into def and rep (when not nil) and
// appends their values to *vals.
func readBatch[T any](r batchReader[T], vals *[]T, k int, def, rep []int16) (int64, int, error) {
	l := len(*vals)
	*vals = slices.Grow(*vals, k)[:l+k]
	lv, nv, err := r.ReadBatch(int64(k), (*vals)[l:], def, rep)
	*vals = (*vals)[:l+min(max(nv, 0), k)]
	return lv, nv, err
}

// present reports whether level j holds a value.
func (c *levelCol) present(j int) bool { return c.def == nil || c.def[j] == c.maxDef }

// take returns the next value as a float64.
func (c *levelCol) take() float64 {
	v := c.val
	c.val++
	if c.kind == kindInt {
		return float64(c.ivals[v])
	}
	return c.fvals[v]
}

// floats takes n rows of a numeric column, writing row i's value to
// dst[i*stride+off] and reporting nulls and values that are not finite.
func (c *levelCol) floats(n int, dst []float32, off, stride int, fail func(int, string)) {
	for i := range n {
		if !c.present(c.lvl + i) {
			fail(i, "null value")
			continue
		}
		if v := c.take(); math.IsNaN(v) || math.IsInf(v, 0) {
			fail(i, fmt.Sprintf("value %v is not finite", v))
		} else {
			dst[i*stride+off] = float32(v)
		}
	}
	c.lvl += n
	c.starts -= n
}

// ids takes n rows of a sparse column, mapping its values to rows of
// feature f's table.
func (c *levelCol) ids(n int, f SparseFeature, fail func(int, string)) SparseColumn {
	if !c.list {
		ids := make([]int64, n)
		if c.def == nil { // a required column: every row holds one value
			copy(ids, c.ivals[c.val:c.val+n])
			mapIDs(ids, f, fail)
			c.val += n
		} else {
			for i := range n {
				if !c.present(c.lvl + i) {
					fail(i, "null id")
					continue
				}
				ids[i] = mapIDOf(f, i, c.ivals[c.val], fail)
				c.val++
			}
		}
		c.lvl += n
		c.starts -= n
		return SparseColumn{IDs: ids}
	}
	col := SparseColumn{Offsets: make([]int32, n+1)}
	j := c.lvl
	for i := range n {
		// Row i's levels: the one at j, which starts it, and those after
		// it that repeat within it.
		for first := true; j < c.nlev && (first || c.rep[j] != 0); j, first = j+1, false {
			switch d := c.def[j]; {
			case d == c.maxDef:
				col.IDs = append(col.IDs, mapIDOf(f, i, c.ivals[c.val], fail))
				c.val++
			case d > c.listDef:
				fail(i, "null id in list")
			case d < c.listDef:
				fail(i, "null list")
			}
		}
		col.Offsets[i+1] = int32(len(col.IDs))
	}
	c.lvl = j
	c.starts -= n
	return col
}
