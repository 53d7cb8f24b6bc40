package bench

import (
	"testing"

	"github.com/actord/actord/actor"
)

// Each actor benchmark starts a system outside the timer, then times the
// program (including Stop, which waits for the last message). One op is one
// message. Each reports msg/s besides ns/op and allocs/op.

func startSystem(b testing.TB, opts ...actor.Option) *actor.System {
	b.Helper()
	sys, err := actor.Start(opts...)
	if err != nil {
		b.Fatal(err)
	}
	return sys
}

func reportRate(b *testing.B, msgs int) {
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msg/s")
}

func BenchmarkStaticSend(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := StaticSend(sys, b.N); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		StaticSendChan(b.N)
		reportRate(b, b.N)
	})
}

func BenchmarkDynamicSend(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := DynamicSend(sys, b.N); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		DynamicSendChan(b.N)
		reportRate(b, b.N)
	})
}

// BenchmarkExecutor runs the whole executor program once per b.N iteration;
// ns/op is per program run, and msg/s the message throughput.
func BenchmarkExecutor(b *testing.B) {
	sz := ExecutorDefault()
	b.Run("system=actord", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			sys := startSystem(b)
			b.StartTimer()
			if err := Executor(sys, sz); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, b.N*sz.Messages())
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ExecutorChan(sz)
		}
		reportRate(b, b.N*sz.Messages())
	})
}
