package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

type requestFlags struct {
	location, mesh, channel, packet, data string
	peers                                 []string
	count, concurrency                    int
	timeout, wait                         time.Duration
	asJSON, lines                         bool
	seed                                  uint64
	secretFile, logLevel                  string
	tls                                   tlsFiles
}

// resultLine is one --json result line.
type resultLine struct {
	OK        bool    `json:"ok"`
	RID       string  `json:"rid,omitempty"`
	Reply     string  `json:"reply,omitempty"`
	Error     string  `json:"error,omitempty"`
	Message   string  `json:"message,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
}

func newRequestCmd() *cobra.Command {
	f := &requestFlags{}
	c := &cobra.Command{
		Use:   "request (--location URL | --peer ENDPOINT[#RID]...) --mesh NAME --channel CH [flags]",
		Short: "Start an ephemeral Client-role node and send N requests",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			err := runRequests(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil && f.asJSON && err != errSilent && !errors.Is(err, errUsage) && !errors.Is(err, zlink.ErrConfig) {
				newReport(cmd.OutOrStdout(), f).failed(err) // JSON on every path
			}
			return err
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.location, "location", "", "Location Store: "+redisURLForms+" (automatic topology)")
	fs.StringArrayVar(&f.peers, "peer", nil, "manual peer ENDPOINT[#RID] (repeatable)")
	fs.StringVar(&f.mesh, "mesh", defaultMesh, "MeshName")
	fs.StringVar(&f.channel, "channel", "", "ChannelName (required)")
	fs.StringVar(&f.packet, "packet", packetEcho, "packet name (echo, sleep, sink or an application packet)")
	fs.StringVar(&f.data, "data", "", "request payload (for sleep: a duration such as 200ms)")
	fs.IntVar(&f.count, "count", 1, "number of requests")
	fs.IntVar(&f.concurrency, "concurrency", 1, "requests in flight at once")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "timeout of each request")
	fs.DurationVar(&f.wait, "wait", 10*time.Second, "how long to wait for ready peers before sending")
	fs.BoolVar(&f.asJSON, "json", false, "print JSON objects instead of text (every line, the summary included)")
	fs.BoolVar(&f.lines, "lines", false, "print one line per request (completion order) before the summary")
	fs.Uint64Var(&f.seed, "seed", 0, "weighted-selection seed (0 = random)")
	fs.StringVar(&f.secretFile, "secret-file", "", "shared-secret file of the trust profile")
	addTLSFlags(c, &f.tls)
	fs.StringVar(&f.logLevel, "log-level", "error", "log level (logs go to stderr)")
	return c
}

func (f *requestFlags) check() error {
	switch {
	case (f.location == "") == (len(f.peers) == 0):
		return usagef("request needs exactly one of --location URL or --peer ENDPOINT[#RID]")
	case f.channel == "":
		return usagef("request needs --channel")
	case f.count < 1:
		return usagef("--count must be at least 1")
	case f.concurrency < 1:
		return usagef("--concurrency must be at least 1")
	case f.timeout <= 0 || f.wait <= 0:
		return usagef("--timeout and --wait must be positive")
	}
	if f.location != "" && !isRedisURL(f.location) {
		return usagef(fmt.Sprintf("--location %q: want %s", f.location, redisURLForms))
	}
	_, err := f.tls.config()
	return err
}

func runRequests(ctx context.Context, f *requestFlags, stdout, stderr io.Writer) error {
	log, err := newLogger(stderr, f.logLevel, "json")
	if err != nil {
		return err
	}
	out := newReport(stdout, f)
	e := &ephemeral{mesh: f.mesh, location: f.location, peers: f.peers, ridPrefix: "request", secretFile: f.secretFile, tls: f.tls, log: log,
		configure: func(mb *routemesh.MeshBuilder) {
			mb.Channel(f.channel).Client()
			if f.seed != 0 {
				mb.SetSelectionSeed(f.seed)
			}
		},
		// An empty mesh has nobody to answer: say so at once.
		precheck: func(descs []location.Descriptor) string {
			if len(descs) == 0 {
				return fmt.Sprintf("no node of mesh %q is registered in the Location Store %s", f.mesh, storeAddr(f.location))
			}
			return ""
		}}
	node, stop, err := e.start(ctx)
	if nt, ok := errors.AsType[*noTargetError](err); ok {
		out.noTarget(nt.msg)
		return errSilent
	}
	if err != nil {
		return err
	}
	defer stop()
	if err := waitPeers(ctx, node, len(f.peers), f.wait); err != nil {
		out.noTarget(cliText(err.Error()))
		return errSilent
	}

	jobs := make(chan struct{}, f.count)
	for range f.count {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range min(f.concurrency, f.count) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				out.add(oneRequest(ctx, node, f))
			}
		}()
	}
	wg.Wait()
	out.summary(channelWeights(ctx, node, f.channel))
	if out.bad > 0 {
		return errSilent
	}
	return nil
}

// oneRequest sends one request (or one sink send) and reports its result.
func oneRequest(ctx context.Context, node *routemesh.Node, f *requestFlags) resultLine {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	start := time.Now()
	var (
		reply []byte
		rid   string
		err   error
	)
	if f.packet == packetSink {
		err = node.Send(ctx, f.channel, f.packet, []byte(f.data))
		rid = "unknown" // a one-way send does not report its target
	} else {
		reply, rid, err = node.CallFrom(ctx, f.channel, f.packet, []byte(f.data))
	}
	res := resultLine{LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		res.Error = wire.CodeOf(err).String()
		res.Message = err.Error()
		return res
	}
	res.OK, res.RID, res.Reply = true, rid, string(reply)
	return res
}

// waitPeers waits until no peer is still connecting and at least one is
// ready (or, with manual peers, until every one is ready). At the deadline
// it proceeds when at least one peer is ready.
func waitPeers(ctx context.Context, n *routemesh.Node, manual int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var st routemesh.Status
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		var err error
		st, err = n.Status(sctx)
		cancel()
		ready := 0
		if err == nil {
			ready = st.CountPeers(routemesh.PeerReady)
			connecting := st.CountPeers(routemesh.PeerConnecting)
			if (manual > 0 && ready >= manual) || (ready > 0 && connecting == 0) {
				return nil
			}
			// Every manual peer refused us for good (wrong mesh, wrong RID,
			// bad secret, version): waiting longer changes nothing.
			if manual > 0 && ready == 0 && allRefused(st) {
				return fmt.Errorf("no ready peer: %s", peerReasons(st))
			}
		}
		// The deadline holds whether or not the status could be read.
		if time.Now().After(deadline) {
			if ready > 0 {
				return nil
			}
			if err != nil {
				return fmt.Errorf("no ready peer after %s: %w", wait, err)
			}
			return fmt.Errorf("no ready peer after %s: %s", wait, peerReasons(st))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// peerReasons says, for every peer that is not ready, its state and the
// last error its connection saw (a wrong mesh, a wrong RID, a refused
// handshake); "no peer known" when there is none.
func peerReasons(st routemesh.Status) string {
	var parts []string
	for _, p := range st.Peers {
		if p.State == routemesh.PeerReady {
			continue
		}
		s := "peer " + p.Endpoint
		if p.RID != "" {
			s += "#" + p.RID
		}
		s += " " + p.State.String()
		if p.State == routemesh.PeerDraining {
			s += " (drained: out of selection)"
		}
		if p.LastError != "" {
			s += ": " + p.LastError
			if strings.Contains(p.LastError, routemesh.ErrTLSUnexpected.Error()) {
				s += " (give this tool the mesh's --tls-ca, --tls-cert and --tls-key)"
			}
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no peer known yet (is a Server of this mesh running and reachable?)"
	}
	return strings.Join(parts, "; ")
}

// channelWeights returns the Server weights this node last saw on channel
// (from its last recorded selection), by RID.
func channelWeights(ctx context.Context, n *routemesh.Node, channel string) map[string]uint16 {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := n.Status(sctx)
	if err != nil {
		return nil
	}
	out := map[string]uint16{}
	for _, ch := range st.Channels {
		if ch.Name == channel && ch.LastSelection != nil {
			for _, c := range ch.LastSelection.Candidates {
				out[c.RID] = c.Weight
			}
		}
	}
	return out
}

// definitiveRejects are the handshake refusals a retry cannot overcome
// under the same configuration (TLS refusals too: tlsRefused).
var definitiveRejects = []string{"wrong_mesh", "wrong_rid", "auth", "version", "capability"}

// allRefused reports whether every peer ended its last handshake with a
// definitive refusal.
func allRefused(st routemesh.Status) bool {
	if len(st.Peers) == 0 {
		return false
	}
	for _, p := range st.Peers {
		if p.State != routemesh.PeerReady && tlsRefused(p.LastError) {
			continue
		}
		_, reason, ok := strings.Cut(p.LastError, "handshake refused by ")
		if !ok || p.State == routemesh.PeerReady {
			return false
		}
		_, reason, _ = strings.Cut(reason, ": ") // "peer: wrong_rid: …"
		definitive := false
		for _, r := range definitiveRejects {
			definitive = definitive || strings.HasPrefix(reason, r)
		}
		if !definitive {
			return false
		}
	}
	return true
}

// tlsRefused reports whether a peer's last error is a refusal at the TLS
// layer that a retry under the same certificates cannot overcome: one side
// has no TLS, or a certificate is untrusted or names another identity.
func tlsRefused(lastErr string) bool {
	for _, e := range []error{routemesh.ErrTLSPlaintext, routemesh.ErrTLSUnexpected, routemesh.ErrTLSUntrusted, routemesh.ErrTLSIdentity} {
		if strings.Contains(lastErr, e.Error()) {
			return true
		}
	}
	return strings.Contains(lastErr, routemesh.ErrTLSPeerRefused.Error()) && strings.Contains(lastErr, "certificate")
}
