// Command remote is two processes exchanging typed messages and asks over
// NATS: a bank that keeps accounts in an actor, and a teller that sends it
// deposits (one way) and asks it for balances (request/reply).
//
//	go run . -role server -nats-embed 127.0.0.1:4222   # the bank, with an embedded NATS server
//	go run . -role client -nats-url nats://127.0.0.1:4222
//
// The server runs until interrupted; the client makes its deposits, asks
// for the balances, prints them and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
	"github.com/nats-io/nats-server/v2/server"
)

// Deposit is sent one way: no answer.
type Deposit struct {
	actor.Message
	Account string
	Amount  int
}

// Balance is a request: its reply is an int.
type Balance struct {
	actor.Request[int]
	Account string
}

// Bank is the server's actor: its fields need no lock, only its behaviours
// touch them, one at a time.
type Bank struct {
	actor.Actor
	accounts map[string]int
}

func (b *Bank) OnDeposit(m *Deposit) actor.Allocation {
	b.accounts[m.Account] += m.Amount
	return actor.Nodelete
}

func (b *Bank) OnBalance(m *Balance) actor.Allocation {
	m.Reply(b.accounts[m.Account])
	return actor.Nodelete
}

// The codecs: both processes must use the same ones.
var (
	depositCodec = remote.CBOR[*Deposit]()
	balanceCodec = remote.JSON[*Balance]()
	intCodec     = remote.JSON[int]()
)

func main() {
	role := flag.String("role", "", "server or client")
	natsURL := flag.String("nats-url", "", "NATS server URL")
	embed := flag.String("nats-embed", "", "server: embed a NATS server listening on host:port")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch *role {
	case "server":
		err = runServer(ctx, *natsURL, *embed, func(url string) { fmt.Println("bank ready on", url) })
	case "client":
		err = runClient(ctx, *natsURL, os.Stdout)
	default:
		err = errors.New("-role server or -role client")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "remote example:", err)
		os.Exit(1)
	}
}

// runServer serves the bank as node "bank" until ctx ends.
func runServer(ctx context.Context, url, embed string, ready func(url string)) (err error) {
	if embed != "" {
		host, port, err := net.SplitHostPort(embed)
		if err != nil {
			return err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return err
		}
		if p == 0 {
			p = -1 // any free port
		}
		ns, err := server.NewServer(&server.Options{Host: host, Port: p, NoLog: true, NoSigs: true})
		if err != nil {
			return err
		}
		ns.Start()
		defer ns.WaitForShutdown()
		defer ns.Shutdown()
		if !ns.ReadyForConnections(10 * time.Second) {
			return errors.New("NATS server not ready")
		}
		url = ns.ClientURL()
	}
	sys, err := actor.Start()
	if err != nil {
		return err
	}
	// Deferred calls run last to first: the node closes, the bank gets its
	// pill, then the system stops, on every path out of here.
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := sys.Stop(sctx); serr != nil && !errors.Is(serr, actor.ErrUndelivered) {
			err = errors.Join(err, serr)
		}
	}()
	node, err := remote.Connect(sys, url, "bank")
	if err != nil {
		return err
	}
	bank, err := actor.Spawn(sys, &Bank{accounts: make(map[string]int)})
	if err != nil {
		node.Close()
		return err
	}
	defer actor.SendPill(bank, actor.FinishedMsg)
	defer node.Close()
	deposit, _ := actor.Bind(bank, (*Bank).OnDeposit)
	balance, _ := actor.Bind(bank, (*Bank).OnBalance)
	if err := errors.Join(
		remote.Export(node, "deposit", deposit, depositCodec),
		remote.ExportRequest(node, "balance", balance, balanceCodec, intCodec),
	); err != nil {
		return err
	}
	ready(url)
	<-ctx.Done()
	return nil
}

// runClient deposits into two accounts and prints their balances.
func runClient(ctx context.Context, url string, out io.Writer) error {
	sys, err := actor.Start()
	if err != nil {
		return err
	}
	defer sys.Stop(context.Background())
	node, err := remote.Connect(sys, url, "teller")
	if err != nil {
		return err
	}
	defer node.Close()
	deposit, err := remote.Import(node, "bank", "deposit", depositCodec)
	if err != nil {
		return err
	}
	balance, err := remote.ImportRequest(node, "bank", "balance", balanceCodec, intCodec)
	if err != nil {
		return err
	}
	for i := 1; i <= 10; i++ {
		if err := deposit.Send(&Deposit{Account: "alice", Amount: i}); err != nil {
			return err
		}
		if err := deposit.Send(&Deposit{Account: "bob", Amount: 2 * i}); err != nil {
			return err
		}
	}
	// The asks go after the deposits on the same link: they see them all.
	for _, acct := range []string{"alice", "bob"} {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := balance.Ask(actx, &Balance{Account: acct})
		cancel()
		if err != nil {
			return fmt.Errorf("balance of %s: %w", acct, err)
		}
		fmt.Fprintf(out, "%s: %d\n", acct, v)
	}
	return nil
}
