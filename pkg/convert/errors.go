package convert

import (
	"errors"
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// LineError locates a bad line of a text input: file, 1-based line number
// and, when one field is at fault, its 1-based index and column name.
type LineError struct {
	File  string
	Line  int64
	Field int    // 0 when the line as a whole is bad
	Name  string // column name of Field
	Msg   string
}

func (e *LineError) Error() string { return "convert: " + e.Where() }

// Where is the error without the command's prefix: file, line, field and
// column, and what is wrong.
func (e *LineError) Where() string {
	if e.Field == 0 {
		return fmt.Sprintf("%s: line %d: %s", e.File, e.Line, e.Msg)
	}
	name := e.Name
	if name == "" {
		name = "beyond the last column"
	}
	return fmt.Sprintf("%s: line %d, field %d (%s): %s", e.File, e.Line, e.Field, name, e.Msg)
}

// Unwrap makes errors.Is(err, dataset.ErrBadData) true, as for a bad value
// in a Parquet file.
func (e *LineError) Unwrap() error { return dataset.ErrBadData }

// ErrColumns marks a bad description of a csv input's columns: a missing
// label, a column given two roles, an unknown role or transform.
var ErrColumns = errors.New("bad column roles")

// ErrSplit marks a bad --split or --split-by.
var ErrSplit = errors.New("bad split")
