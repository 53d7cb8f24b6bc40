package executor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An extension costs plain actors no space: the cell stays 40 bytes.
func TestCellSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit layout")
	}
	assert.Equal(t, uintptr(40), unsafe.Sizeof(Cell{}))
}

type boundedSink struct {
	cell Cell
	n    atomic.Int64
}

type item struct{ Message }

func (s *boundedSink) onItem(*item) Allocation {
	s.n.Add(1)
	time.Sleep(time.Microsecond) // slower than 16 senders
	return Nodelete
}

// The bound holds at every moment under 16 concurrent senders: a sampler
// reads the private queue's length under its lock throughout.
func TestBoundNeverExceeded(t *testing.T) {
	for _, ov := range []Overflow{Reject, DropNewest, DropOldest} {
		t.Run(ov.String(), func(t *testing.T) {
			const senders, per, bound = 16, 1500, 16
			e, err := Start(Config{Workers: 2})
			require.NoError(t, err)
			s := &boundedSink{}
			require.NoError(t, SpawnWith(e, &s.cell, s, SpawnOptions{MailboxBound: bound, Overflow: ov}))
			x := s.cell.ext.Load()
			require.NotNil(t, x)
			require.NotNil(t, x.pq)
			queued := func() int64 {
				x.pq.mu.Lock()
				defer x.pq.mu.Unlock()
				return int64(x.pq.ring.n)
			}
			stopSampling := sampleMax(queued)
			// The senders sample too, every 16th send: on a loaded machine
			// the sampler may not run at all while the queue holds items.
			var sendersSaw atomic.Int64
			saw := func(n int64) {
				for m := sendersSaw.Load(); n > m && !sendersSaw.CompareAndSwap(m, n); m = sendersSaw.Load() {
				}
			}
			var refused atomic.Int64
			var wg sync.WaitGroup
			for i := 0; i < senders; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < per; j++ {
						if err := Send(&s.cell, s, &item{}, (*boundedSink).onItem); errors.Is(err, ErrMailboxFull) {
							refused.Add(1)
						} else if !assert.NoError(t, err) {
							return
						}
						if j%16 == 0 {
							saw(queued())
						}
					}
				}()
			}
			wg.Wait()
			maxSeen := max(stopSampling(), sendersSaw.Load())
			assert.LessOrEqual(t, maxSeen, int64(bound))
			assert.Positive(t, maxSeen)
			st := e.Stats()
			lost := refused.Load() + int64(st.MailboxDroppedNewest+st.MailboxDroppedOldest)
			assert.EqualValues(t, refused.Load(), st.MailboxRejected)
			require.Eventually(t, func() bool { return s.n.Load()+lost == senders*per }, 10*time.Second, time.Millisecond)
			require.Eventually(t, func() bool { return SendPill(&s.cell, s, NewPill(Finished)) == nil }, 5*time.Second, time.Millisecond)
			require.NoError(t, e.Stop(context.Background()))
			st = e.Stats()
			// Conservation: sent = processed + dead letters (+ the oldest dropped, which were sent).
			tot := st.Total()
			assert.Equal(t, st.MessagesSent, tot.MessagesProcessed()+tot.DeadLetters+st.MailboxDroppedOldest,
				"sent %d processed %d dead %d dropped-oldest %d", st.MessagesSent, tot.MessagesProcessed(), tot.DeadLetters, st.MailboxDroppedOldest)
		})
	}
}

func TestEnumNames(t *testing.T) {
	assert.Equal(t, "Escalate", Escalate.String())
	assert.Equal(t, "Directive(9)", Directive(9).String())
	assert.Equal(t, "DropOldest", DropOldest.String())
	assert.Equal(t, "Overflow(7)", Overflow(7).String())
	assert.Equal(t, "budget_exhausted", ReasonBudget.String())
	assert.Equal(t, "system_stopped", ReasonStopped.String())
	assert.Equal(t, "Reason(200)", Reason(200).String())
}
