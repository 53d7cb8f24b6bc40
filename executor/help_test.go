package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// helpServer answers each request with the number of plain messages it
// has received, checks that each sender's plain messages come in order,
// and records what a behaviour observes of its identity.
type helpServer struct {
	cell    Cell
	self    Port[*greq]
	last    map[int]int // sender -> last sequence number seen
	outOfOr int
	notIn   int // deliveries that did not see InBehaviour
	askErr  int // nested Asks that did not fail with ErrAskInBehaviour
	plain   int
}

type helpSeq struct {
	Message
	from, n int
}

func (s *helpServer) onSeq(m *helpSeq) Allocation {
	if s.last[m.from]+1 != m.n {
		s.outOfOr++
	}
	s.last[m.from] = m.n
	s.plain++
	if !InBehaviour() {
		s.notIn++
	}
	return Nodelete
}

func (s *helpServer) onReq(r *greq) Allocation {
	if !InBehaviour() {
		s.notIn++
	}
	if _, err := Ask(context.Background(), s.self, &greq{}); !errors.Is(err, ErrAskInBehaviour) {
		s.askErr++
	}
	_ = r.Reply(s.plain)
	return Nodelete
}

// Callers that help: asks from several goroutines, interleaved with plain
// sends, to an actor on one or two workers. Every reply comes, each
// sender's messages arrive in order, behaviours run by a helping caller
// are in a behaviour, and every message is counted once.
func TestCallersThatHelp(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			e, err := Start(Config{Workers: workers})
			require.NoError(t, err)
			s := &helpServer{last: map[int]int{}}
			require.NoError(t, Spawn(e, &s.cell, s))
			rp, err := Bind(&s.cell, s, (*helpServer).onReq)
			require.NoError(t, err)
			s.self = rp
			sp, err := Bind(&s.cell, s, (*helpServer).onSeq)
			require.NoError(t, err)
			const senders, rounds = 4, 300
			var wg sync.WaitGroup
			for g := 0; g < senders; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for i := 1; i <= rounds; i++ {
						if err := sp.Send(&helpSeq{from: g, n: i}); err != nil {
							t.Error(err)
							return
						}
						if i%3 == 0 {
							if _, err := Ask(context.Background(), rp, &greq{}); err != nil {
								t.Error(err)
								return
							}
						}
						if i%10 == 0 {
							time.Sleep(time.Millisecond) // let the worker park
						}
					}
				}(g)
			}
			wg.Wait()
			n, err := Ask(context.Background(), rp, &greq{})
			require.NoError(t, err)
			require.Equal(t, senders*rounds, n)
			require.Zero(t, s.outOfOr)
			require.Zero(t, s.notIn)
			require.Zero(t, s.askErr)
			st := e.Stats()
			var processed, visits uint64
			for i := range st.Workers {
				processed += st.Workers[i].MessagesProcessed()
				visits += st.Workers[i].callerVisits
			}
			asks := uint64(senders*(rounds/3) + 1)
			require.Equal(t, uint64(senders*rounds)+asks, processed) // a nested Ask sends nothing
			t.Logf("caller visits: %d of %d asks", visits, asks)
			require.NoError(t, SendPill(&s.cell, s, NewPill(Finished)))
			require.NoError(t, e.Stop(context.Background()))
		})
	}
}

// BenchmarkAskHelp: one op is one Ask answered, from one goroutine outside
// the system, to an actor on a system with one worker, with callers that
// help off (the worker is woken for each ask) and on.
func BenchmarkAskHelp(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("help=%v", on), func(b *testing.B) {
			e, err := Start(Config{Workers: 1, NoCallerHelp: !on})
			require.NoError(b, err)
			s := &fwdServer{}
			require.NoError(b, Spawn(e, &s.cell, s))
			p, err := Bind(&s.cell, s, (*fwdServer).onReq)
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Ask(ctx, p, &greq{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := e.Stats()
			var visits uint64
			for i := range st.Workers {
				visits += st.Workers[i].callerVisits
			}
			b.ReportMetric(float64(visits)/float64(b.N), "helped/op")
			require.NoError(b, SendPill(&s.cell, s, NewPill(Finished)))
			require.NoError(b, e.Stop(context.Background()))
		})
	}
}
