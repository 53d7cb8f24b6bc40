package bench

import (
	"context"
	"sync"

	"github.com/actord/actord/actor"
)

// ---- matrix ----------------------------------------------------------------
//
// Z = X * Y for N x N matrices, one actor per row of X, each sent (by
// message) what it needs to compute its row of Z. Compute-bound: it measures
// whether the runtime lets behaviours use the cores, not messaging.

// Matrices holds the operands and the result, row-major.
type Matrices struct {
	N       int
	X, Y, Z []float64
}

// NewMatrices returns deterministic N x N operands and a zero result.
func NewMatrices(n int) *Matrices {
	m := &Matrices{N: n, X: make([]float64, n*n), Y: make([]float64, n*n), Z: make([]float64, n*n)}
	for i := range m.X {
		m.X[i] = float64(i%7) - 3
		m.Y[i] = float64(i%5) - 2
	}
	return m
}

// MatrixDefault is the Actors chapter's 3072 with ACTORD_BENCH_FULL=1, else
// 512.
func MatrixDefault() int {
	if Full() {
		return 3072
	}
	return 512
}

// Row computes row i of Z. Every system (actord, goroutines, the peers in
// bench/compare) calls this one function, never inlined, so every system runs
// the same machine code for the row loop and the comparison is about
// scheduling, not about how the compiler placed the loop at each call site
// (which changes its speed a lot: see BENCHMARKS.md).
//
//go:noinline
func (m *Matrices) Row(i int) {
	n := m.N
	z := m.Z[i*n : (i+1)*n]
	clear(z)
	x := m.X[i*n : (i+1)*n]
	for k, xik := range x {
		y := m.Y[k*n : (k+1)*n]
		y = y[:len(z)]
		// Unrolled by four: a one-element loop body is a few dozen bytes,
		// and whether it straddles a 64-byte boundary (which depends on
		// where the linker puts this function, i.e. on the size of the
		// code before it) doubled its time on AMD EPYC.
		j := 0
		for ; j+4 <= len(z); j += 4 {
			z[j] += xik * y[j]
			z[j+1] += xik * y[j+1]
			z[j+2] += xik * y[j+2]
			z[j+3] += xik * y[j+3]
		}
		for ; j < len(z); j++ {
			z[j] += xik * y[j]
		}
	}
}

type rowActor struct{ actor.Actor }

type rowMsg struct {
	actor.Message
	m *Matrices
	i int
}

func (*rowActor) compute(r *rowMsg) actor.Allocation {
	r.m.Row(r.i)
	return actor.Finished
}

// Matrix runs the matrix benchmark on sys and stops it.
func Matrix(sys *actor.System, m *Matrices) error {
	actors := make([]rowActor, m.N)
	msgs := make([]rowMsg, m.N)
	for i := range actors {
		if _, err := actor.Spawn(sys, &actors[i]); err != nil {
			return err
		}
	}
	for i := range actors {
		msgs[i] = rowMsg{m: m, i: i}
		if err := actor.Send(&actors[i], &msgs[i], (*rowActor).compute); err != nil {
			return err
		}
	}
	return sys.Stop(context.Background())
}

// MatrixChan is Matrix with a goroutine per row, each receiving its row
// index on a channel.
func MatrixChan(m *Matrices) {
	var wg sync.WaitGroup
	wg.Add(m.N)
	for i := 0; i < m.N; i++ {
		ch := make(chan int, 1)
		go func() {
			defer wg.Done()
			m.Row(<-ch)
		}()
		ch <- i
	}
	wg.Wait()
}

// Check returns the sum of Z, to verify that all systems computed the same.
func (m *Matrices) Check() float64 {
	s := 0.0
	for _, v := range m.Z {
		s += v
	}
	return s
}
