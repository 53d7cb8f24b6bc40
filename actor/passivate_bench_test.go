package actor_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/actord/actord/actor"
)

// napper is the benchmarks' actor: a counter with a Stopped hook, as an
// entity with state to save would have.
type napper struct {
	actor.Actor
	n    int
	done *sync.WaitGroup
}

type napMsg struct{ actor.Message }

type napDone struct{ actor.Message }

func (a *napper) onMsg(*napMsg) actor.Allocation { a.n++; return actor.Nodelete }

func (a *napper) onDone(*napDone) actor.Allocation { a.done.Done(); return actor.Nodelete }

// napPlain is napper without the Stopped hook: a plain actor unless
// spawned with options.
type napPlain struct{ napper }

type napHooked struct{ napper }

func (*napHooked) Stopped(actor.Reason) {}

// BenchmarkPassivationDelivery: the cost of one message, sent from a
// goroutine outside the system to 100 actors in turn and delivered, with
// and without WithPassivation (an hour: no check fires during the run),
// in the same run:
//   - plain: no option, no hook (the inline delivery path);
//   - plain+passivation: the same type with WithPassivation (extended);
//   - napHooked: a Stopped hook, no option (extended, as an entity is);
//   - napHooked+passivation: the same with WithPassivation.
func BenchmarkPassivationDelivery(b *testing.B) {
	type variant struct {
		name  string
		spawn func(sys *actor.System, wg *sync.WaitGroup) (func(), func())
	}
	const actors = 100
	mk := func(hook, pass bool) func(*actor.System, *sync.WaitGroup) (func(), func()) {
		return func(sys *actor.System, wg *sync.WaitGroup) (func(), func()) {
			var opts []actor.SpawnOption
			if pass {
				opts = append(opts, actor.WithPassivation(time.Hour))
			}
			if hook {
				as := make([]*napHooked, actors)
				for i := range as {
					as[i] = must(actor.Spawn(sys, &napHooked{napper{done: wg}}, opts...))
				}
				i := 0
				return func() {
						actor.Send(&as[i].napper, &napMsg{}, (*napper).onMsg)
						if i++; i == actors {
							i = 0
						}
					}, func() {
						for _, a := range as {
							actor.Send(&a.napper, &napDone{}, (*napper).onDone)
						}
					}
			}
			as := make([]*napPlain, actors)
			for i := range as {
				as[i] = must(actor.Spawn(sys, &napPlain{napper{done: wg}}, opts...))
			}
			i := 0
			return func() {
					actor.Send(&as[i].napper, &napMsg{}, (*napper).onMsg)
					if i++; i == actors {
						i = 0
					}
				}, func() {
					for _, a := range as {
						actor.Send(&a.napper, &napDone{}, (*napper).onDone)
					}
				}
		}
	}
	for _, v := range []variant{
		{"plain", mk(false, false)},
		{"plain+passivation", mk(false, true)},
		{"hooked", mk(true, false)},
		{"hooked+passivation", mk(true, true)},
	} {
		b.Run(v.name, func(b *testing.B) {
			sys, _ := actor.Start(actor.WithWorkers(1))
			var wg sync.WaitGroup
			send, finish := v.spawn(sys, &wg)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				send()
			}
			wg.Add(actors)
			finish()
			wg.Wait()
			b.StopTimer()
			stopNow(sys)
		})
	}
}

// BenchmarkIdleEntityMemory reports the heap per idle entity (B/entity):
// 100,000 entities made by Get and left idle, with a Stopped hook, with and
// without WithPassivation (an hour: none passivates during the count). Run
// with -benchtime=1x.
func BenchmarkIdleEntityMemory(b *testing.B) {
	const n = 100_000
	names := make([]string, n)
	for i := range names {
		names[i] = "e" + strconv.Itoa(i)
	}
	for _, pass := range []bool{false, true} {
		name := "plain"
		var opts []actor.SpawnOption
		if pass {
			name = "passivation"
			opts = append(opts, actor.WithPassivation(time.Hour))
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				sys, _ := actor.Start(actor.WithWorkers(1))
				ctx := context.Background()
				es := actor.NewEntities(sys, func(string) *napHooked { return &napHooked{} }, opts...)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for _, nm := range names {
					must(es.Get(ctx, nm))
				}
				time.Sleep(50 * time.Millisecond) // the Started/first checks settle
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/entity")
				runtime.KeepAlive(es)
				stopNow(sys)
			}
		})
	}
}

// stopNow stops sys with its actors alive (a context already ended: they
// end with ReasonStopped).
func stopNow(sys *actor.System) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = sys.Stop(ctx)
}
