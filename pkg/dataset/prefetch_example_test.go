package dataset_test

import (
	"context"
	"fmt"
	"io"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// A producer that counts to three, read two values ahead.
func ExampleNewPrefetch() {
	n := 0
	p := dataset.NewPrefetch(2, func(ctx context.Context) (int, error) {
		if n == 3 {
			return 0, io.EOF
		}
		n++
		return n, nil
	}, nil)
	defer p.Close()
	for {
		v, err := p.Next(context.Background())
		if err == io.EOF {
			break
		}
		fmt.Println(v)
	}
	// Output:
	// 1
	// 2
	// 3
}
