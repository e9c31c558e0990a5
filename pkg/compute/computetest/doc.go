// Package computetest holds the conformance suites for compute.Backend: one
// exported function per kernel contract, which every backend's tests call
// (compute's own CPU configurations, and any other backend such as a
// device-backed one).
//
// Each suite moves its data into the backend's memory through the backend's
// own copy calls (Alloc, CopyIn, CopyOut, Sync), so that it runs unchanged
// on a backend whose memory the program cannot read, and fails when the
// backend still holds memory after the test. It compares the backend with
// compute.Reference on odd shapes,
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
