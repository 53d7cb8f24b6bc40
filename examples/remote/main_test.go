package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServerAndClient runs both roles in this process: the server with an
// embedded NATS server on a random port, the client against it.
func TestServerAndClient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, "", "127.0.0.1:0", func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("server not ready")
	}
	var out bytes.Buffer
	if err := runClient(context.Background(), url, &out); err != nil {
		t.Fatal(err)
	}
	if want := "alice: 55\nbob: 110\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
