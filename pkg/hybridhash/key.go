package hybridhash

import (
	"cmp"
	"encoding/binary"
)

// Key names one embedding row: the table and the row's ID in it. IDs are
// any 64-bit values (raw IDs or row indices).
type Key struct {
	Table int32
	ID    int64
}

// Compare orders keys by table, then ID.
func (k Key) Compare(o Key) int {
	if c := cmp.Compare(k.Table, o.Table); c != 0 {
		return c
	}
	return cmp.Compare(k.ID, o.ID)
}

// keyLen is the length of a key in the disk tier.
const keyLen = 12

// encode writes k big-endian (table, then ID as unsigned): the disk tier's
// record key, whose byte order is ReadSaved's order.
func (k Key) encode(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(k.Table))
	return binary.BigEndian.AppendUint64(b, uint64(k.ID))
}

func decodeKey(b []byte) Key {
	return Key{Table: int32(binary.BigEndian.Uint32(b)), ID: int64(binary.BigEndian.Uint64(b[4:]))}
}

// hash mixes k with seed (splitmix64's finaliser).
func (k Key) hash(seed uint64) uint64 {
	return mix64(uint64(k.ID) ^ mix64(uint64(uint32(k.Table))+seed*0x9e3779b97f4a7c15))
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
