package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The control protocol: a node asks another to activate an entity with a
// core NATS request to <cluster>.cluster.<node>.activate carrying
// activateRequest; the answer is activateReply.

type activateRequest struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

type activateReply struct {
	Node string `json:"node,omitempty"` // who holds the activation
	Code string `json:"code,omitempty"` // an error's class, see errCodes
	Err  string `json:"err,omitempty"`
}

// errCodes maps the sentinels that cross the control protocol.
var errCodes = map[string]error{
	"nohost":    ErrNoHost,
	"notjoined": ErrNotJoined,
	"kv":        ErrKV,
	"fenced":    ErrFenced,
	"badname":   ErrBadName,
	"retry":     errRetry,
}

func (c *Cluster) ctlSubject(node string) string {
	return c.cfg.name + ".cluster." + node + ".activate"
}

// onControl answers an activation request, from a goroutine of its own:
// the claim takes key-value round trips. Once Leave has begun it answers
// at once that the requester should look again (by then, or soon, this
// member is out of its view), rather than leave it waiting for its
// deadline.
func (c *Cluster) onControl(m *nats.Msg) {
	started := c.goTracked(func(context.Context) {
		var req activateRequest
		var rep activateReply
		if err := json.Unmarshal(m.Data, &req); err != nil {
			c.m.malformed.Inc()
			rep.Code, rep.Err = "badname", err.Error()
		} else if err := checkRequest(req); err != nil {
			// Checked before anything reaches the key-value store: an id
			// too long makes a subject over the server's limit, which
			// would close this member's connection.
			c.m.malformed.Inc()
			rep.Code, rep.Err = "badname", err.Error()
		} else if k := c.kinds[req.Kind]; k == nil {
			rep.Code, rep.Err = "nohost", fmt.Sprintf("kind %q unknown on %s", req.Kind, c.Name())
		} else {
			ctx, cancel := context.WithTimeout(c.ctx, 2*c.cfg.ttl)
			owner, err := k.activate(ctx, req.ID)
			cancel()
			rep.Node = owner
			if err != nil {
				rep.Code, rep.Err = "", err.Error()
				for code, e := range errCodes {
					if errors.Is(err, e) {
						rep.Code = code
					}
				}
			}
		}
		b, _ := json.Marshal(rep)
		_ = m.Respond(b)
	})
	if !started {
		b, _ := json.Marshal(activateReply{Code: "retry", Err: c.Name() + " is leaving"})
		_ = m.Respond(b)
	}
}

// checkRequest applies Get's rules to a request that came over the wire:
// a valid kind name, an id neither empty nor over maxID bytes.
func checkRequest(req activateRequest) error {
	if !validName.MatchString(req.Kind) {
		return fmt.Errorf("%w: kind of %d bytes", ErrBadName, len(req.Kind))
	}
	if req.ID == "" || len(req.ID) > maxID {
		return fmt.Errorf("%w: entity id of %d bytes", ErrBadName, len(req.ID))
	}
	return nil
}

// goTracked runs f on a goroutine that Leave waits for, with the cluster's
// context (cancelled by Leave); it reports false, running nothing, once
// Leave has begun.
func (c *Cluster) goTracked(f func(ctx context.Context)) bool {
	c.mu.Lock()
	if c.left || c.ctx == nil {
		c.mu.Unlock()
		return false
	}
	c.wg.Add(1) // Leave waits for wg only after setting left, under mu
	ctx := c.ctx
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		f(ctx)
	}()
	return true
}

// requestActivate asks node to activate (kind, id) and returns the node
// holding it. nats.ErrNoResponders comes back wrapped when node is gone.
func (c *Cluster) requestActivate(ctx context.Context, node, kind, id string) (string, error) {
	b, _ := json.Marshal(activateRequest{Kind: kind, ID: id})
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 4*c.cfg.ttl)
		defer cancel()
	}
	m, err := c.nc.RequestWithContext(ctx, c.ctlSubject(node), b)
	if err != nil {
		return "", fmt.Errorf("cluster: asking %s to activate %s/%s: %w", node, kind, id, err)
	}
	var rep activateReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return "", fmt.Errorf("cluster: activation answer from %s: %w", node, err)
	}
	if rep.Err != "" {
		if rep.Code == "notjoined" {
			// The target's lease lapsed (it is still in our view): this
			// member is joined, so ErrNotJoined would mislead the caller.
			return "", fmt.Errorf("%w: %s is not a member now: %s", ErrFenced, node, rep.Err)
		}
		if e := errCodes[rep.Code]; e != nil {
			return "", fmt.Errorf("%w: from %s: %s", e, node, rep.Err)
		}
		return "", fmt.Errorf("cluster: from %s: %s", node, rep.Err)
	}
	return rep.Node, nil
}

// fenceWatch watches the activations' bucket (keys and revisions only) and
// stops a local activation whose key another node took over. The watch is
// restarted when it ends and after the connection reconnected (a watch
// does not recover by itself): the restart reads every key, so a takeover
// missed meanwhile is seen then.
func (c *Cluster) fenceWatch() {
	defer c.wg.Done()
	first := true
	for c.ctx.Err() == nil {
		c.watchActivations(first)
		first = false
		select {
		case <-c.ctx.Done():
		case <-time.After(c.cfg.ttl / 20):
		}
	}
}

func (c *Cluster) watchActivations(updatesOnly bool) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	opts := []jetstream.WatchOpt{jetstream.MetaOnly(), jetstream.IgnoreDeletes()}
	if updatesOnly {
		opts = append(opts, jetstream.UpdatesOnly())
	}
	reconnects := c.nc.Stats().Reconnects
	w, err := c.activations.WatchAll(ctx, opts...)
	if err != nil {
		c.m.kvErrors.Inc()
		return
	}
	defer w.Stop()
	tick := time.NewTicker(c.cfg.ttl / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if c.nc.Stats().Reconnects != reconnects {
				return
			}
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue
			}
			kind, id, ok := parseKey(e.Key())
			if !ok {
				continue
			}
			if k := c.kinds[kind]; k != nil {
				k.fenceKey(id, e.Revision())
			}
		}
	}
}
