// Package computetest holds the conformance suites for compute.Backend: one
// exported function per kernel contract, which every backend's tests call
// (compute's own CPU configurations, and any other backend such as a
// device-backed one).
//
// Each suite compares the backend with compute.Reference on odd shapes,
// surrounds every output buffer with guard values to catch writes out of
// range, and checks gradients against central finite differences of an
// independent float64 forward pass. A suite passes for Reference itself; the
// comparisons are then trivial but the gradient and hand-computed checks are
// not.
//
// Usage, in a backend's _test.go:
//
//	func TestConformance(t *testing.T) {
//		b := newMyBackend(t)
//		computetest.All(t, b)
//	}
package computetest
