package layout

// Class is the class of a FAE mini-batch: every input of a hot mini-batch
// looks up only hot rows; a cold mini-batch holds inputs with a cold ID.
type Class int

const (
	// Cold mini-batches hold table IDs, at least one cold ID per input.
	Cold Class = iota
	// Hot mini-batches hold slots of the packed hot table.
	Hot
)

// String returns "cold" or "hot", which is also the name of the class's
// directory in a layout.
func (c Class) String() string {
	if c == Hot {
		return "hot"
	}
	return "cold"
}
