//go:build !unix

package train

func cpuSeconds() float64 { return 0 }
