package dataset

import (
	"errors"
	"fmt"
)

// Sentinel errors; wrap them with the location of the problem.
var (
	// ErrBadData marks malformed input: a wrong value in a row.
	ErrBadData = errors.New("bad data")
	// ErrSchema marks a file whose columns do not match the configuration.
	ErrSchema = errors.New("schema mismatch")
	// ErrNoData marks a path that holds no Parquet files.
	ErrNoData = errors.New("no data")
)

// RowError locates a bad value: file, row group, row within the group and column.
type RowError struct {
	Pos    Position
	Column string
	Msg    string
}

func (e *RowError) Error() string {
	return fmt.Sprintf("dataset: %s: row group %d, row %d of the group, column %q: %s",
		e.Pos.File, e.Pos.RowGroup, e.Pos.Row, e.Column, e.Msg)
}

func (e *RowError) Unwrap() error { return ErrBadData }
