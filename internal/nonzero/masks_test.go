package nonzero

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// naive is the definition of a block's mask.
func naive(src []uint32) []uint64 {
	out := make([]uint64, (len(src)+63)/64)
	for i, c := range src {
		if c != 0 {
			out[i/64] |= 1 << (i % 64)
		}
	}
	return out
}

// TestMasks compares Masks with the definition on lengths around the
// block size, densities from empty to full, and values with every bit
// pattern (the compare is on the whole 32 bits: 1<<31 is not zero).
func TestMasks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 129, 1000, 4096, 4097} {
		for _, density := range []float64{0, 0.01, 0.5, 0.99, 1} {
			src := make([]uint32, n)
			for i := range src {
				if r.Float64() < density {
					switch r.IntN(4) {
					case 0:
						src[i] = 1
					case 1:
						src[i] = 1 << 31
					case 2:
						src[i] = ^uint32(0)
					default:
						src[i] = r.Uint32() | 1<<r.IntN(32)
					}
				}
			}
			got := make([]uint64, (n+63)/64)
			for i := range got {
				got[i] = ^uint64(0) // Masks must set every bit it owns
			}
			Masks(got, src)
			want := naive(src)
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("n %d density %.2f: block %d mask %064b; want %064b", n, density, k, got[k], want[k])
				}
			}
		}
	}
}

// TestMasksChecksLength: a dst of the wrong length is a caller's bug.
func TestMasksChecksLength(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Masks took 1 mask for 65 values")
		}
	}()
	Masks(make([]uint64, 1), make([]uint32, 65))
}

func BenchmarkMasks(b *testing.B) {
	src := make([]uint32, 1<<16)
	for i := range src {
		if i%3 == 0 {
			src[i] = uint32(i)
		}
	}
	dst := make([]uint64, len(src)/64)
	b.SetBytes(int64(4 * len(src)))
	for b.Loop() {
		Masks(dst, src)
	}
}

// TestWalker: a walk visits every chunk once, in order, with the masks
// Masks gives, across chunk boundaries and a short last chunk.
func TestWalker(t *testing.T) {
	for _, n := range []int{0, 1, ChunkLen - 1, ChunkLen, ChunkLen + 65, 3*ChunkLen + 7} {
		src := make([]uint32, n)
		for i := range src {
			if i%7 == 0 || i%64 == 63 {
				src[i] = uint32(i) | 1
			}
		}
		want := naive(src)
		var got []uint64
		next := 0
		w := Walk(src)
		for w.Next() {
			if w.Lo != next || len(w.Chunk) != min(ChunkLen, n-next) || &w.Chunk[0] != &src[next] {
				t.Fatalf("n %d: chunk at %d of %d values; want %d of %d", n, w.Lo, len(w.Chunk), next, min(ChunkLen, n-next))
			}
			got = append(got, w.Masks...)
			next += len(w.Chunk)
		}
		if next != n || !slices.Equal(got, want) {
			t.Fatalf("n %d: walked %d values, masks equal %v", n, next, slices.Equal(got, want))
		}
	}
}
