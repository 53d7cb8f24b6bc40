package bench

import (
	"testing"

	"github.com/actord/actord/actor"
)

func TestAskPrograms(t *testing.T) {
	for _, w := range []int{1, 2} {
		if err := PortSend(startSystem(t, actor.WithWorkers(w)), 1000); err != nil {
			t.Fatal(err)
		}
		if err := AskRoundTrip(startSystem(t, actor.WithWorkers(w)), 1000); err != nil {
			t.Fatal(err)
		}
		if err := PingPongRequest(startSystem(t, actor.WithWorkers(w)), 1000); err != nil {
			t.Fatal(err)
		}
	}
	AskRoundTripChan(1000)
	for _, w := range []int{1, 2} {
		if err := BoundedFeed(startSystem(t, actor.WithWorkers(w)), 5*FeedBound); err != nil {
			t.Fatal(err)
		}
	}
	BoundedFeedChan(5 * FeedBound)
}

// BenchmarkPortSend is static send through a port, beside StaticSend.
func BenchmarkPortSend(b *testing.B) {
	b.Run("system=actord/via=send", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := StaticSend(sys, b.N); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	b.Run("system=actord/via=port", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := PortSend(sys, b.N); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
}

// BenchmarkAskRoundTrip: one op is one ask answered (a goroutine outside the
// system asking an actor), beside a goroutine asking a server goroutine over
// channels.
func BenchmarkAskRoundTrip(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := AskRoundTrip(sys, b.N); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		AskRoundTripChan(b.N)
	})
}

// BenchmarkPingPongRequest: one op is one request/reply round trip between
// two actors (AskAsync, reply as a message), beside two goroutines doing
// request/response over channels.
func BenchmarkPingPongRequest(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := PingPongRequest(sys, b.N); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		PingPongRequestChan(b.N)
	})
}

// BenchmarkGo: one op is one job run off the workers with actor.Go and
// delivered back as a message, beside a goroutine per job with a channel.
func BenchmarkGo(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := GoJobs(sys, b.N); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		GoJobsChan(b.N)
	})
}

func TestGoJobs(t *testing.T) {
	if err := GoJobs(startSystem(t), 500); err != nil {
		t.Fatal(err)
	}
	GoJobsChan(500)
}

// BenchmarkBoundedFeed: one op is one message sent with SendContext from a
// goroutine to an actor whose mailbox holds FeedBound messages (the sender
// waits for room whenever it is full), beside a goroutine sending on a
// channel with FeedBound slots to a consumer goroutine.
func BenchmarkBoundedFeed(b *testing.B) {
	b.Run("system=actord", func(b *testing.B) {
		sys := startSystem(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := BoundedFeed(sys, b.N); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("system=chan", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		BoundedFeedChan(b.N)
	})
}
