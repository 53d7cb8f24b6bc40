// Package common holds helpers the peers' versions of the benchmark programs
// share: the churn benchmark's random generator and validity checks. (The
// matrix loop and the pipeline's pacing are package bench's own
// (*Matrices).Row and PaceSends, called by every system.)
package common

import (
	"fmt"

	"github.com/actord/actord/bench"
)

// RNG is the churn benchmark's xorshift64 generator (bench's churnRNG), so
// that the peers' clients draw the same spots and cells as actord's.
type RNG uint64

// NewRNG returns client i's generator.
func NewRNG(i int) RNG { return RNG(uint64(i+1)*0x9E3779B97F4A7C15 | 1) }

// Next returns the next number.
func (r *RNG) Next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = RNG(x)
	return x
}

// Touch increments cells random cells of data.
func (r *RNG) Touch(data []uint64, cells int) {
	n := uint64(len(data))
	for range cells {
		data[r.Next()%n]++
	}
}

// SumArrays returns the sum of the cells of the distinct non-nil arrays and
// their number.
func SumArrays(datas [][]uint64) (sum uint64, n int) {
	seen := make(map[*uint64]bool, len(datas))
	for _, d := range datas {
		if len(d) == 0 || seen[&d[0]] {
			continue
		}
		seen[&d[0]] = true
		n++
		for _, v := range d {
			sum += v
		}
	}
	return sum, n
}

// CheckChurn panics if sz is not a valid churn or locality size (the same
// rules as package bench's).
func CheckChurn(sz bench.ChurnSize) {
	if sz.Spots < 1 || sz.Clients <= sz.Spots || sz.Iterations < 1 || sz.Words < 0 || sz.Cells < 0 || (sz.Cells > 0) != (sz.Words > 0) {
		panic(fmt.Sprintf("compare: invalid ChurnSize %+v", sz))
	}
}

// CheckCycle panics if sz is not a valid cycle size.
func CheckCycle(sz bench.CycleSize) {
	if sz.Rings < 1 || sz.RingSize < 1 || sz.Hops < sz.RingSize {
		panic(fmt.Sprintf("compare: invalid CycleSize %+v", sz))
	}
}
