package location

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// Redis is the Location Store on a real Redis server (standalone or Cluster)
// through rueidis. Safe for concurrent use. Key layout and TTLs: see doc.go.
// Reads go to masters only and no client-side cache is used.
type Redis struct {
	validated // the Store's methods: validation, then the methods in redis_*.go

	cfg    RedisConfig
	client rueidis.Client

	ctx    context.Context // ended by Close; parent of every Watch
	cancel context.CancelFunc
	wg     sync.WaitGroup // Watch and replica-check goroutines; Add only under mu while !closed (or in NewRedis)
	mu     sync.Mutex     // orders wg.Add in Watch against Close
	closed atomic.Bool
	once   sync.Once

	seen     seenRevisions  // mesh revisions read lately (watches need no read of their own then)
	corrupt  corruptLog     // records skipped or refused as ErrCorrupt
	replicas replicaTracker // which masters need WAIT after a Spot directory write
	waits    atomic.Uint64  // Spot directory writes followed by WAIT
	unconf   atomic.Uint64  // of which no replica confirmed
	errs     atomic.Uint64  // operations Redis did not answer as asked (wrap)
}

var _ Store = (*Redis)(nil)

// idleCheck is how long a connection to Redis may stay silent before the
// client checks it with a PING (and the TCP keep-alive interval). The
// client's default, a second, would cost every node a PING per second on
// each quiet connection; a dead connection is also found by the deadline
// of the next command (OpTimeout).
const idleCheck = 5 * time.Second

// NewRedis connects to Redis, standalone or Cluster (detected). It fails
// when the server is unreachable within cfg.DialTimeout (or ctx). With
// ReplicaAcksAuto it reads which masters have replicas before returning.
func NewRedis(ctx context.Context, cfg RedisConfig) (*Redis, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:      append([]string{cfg.Addr}, cfg.Addrs...),
		SelectDB:         cfg.DB,
		Username:         cfg.Username,
		Password:         cfg.Password,
		TLSConfig:        cfg.TLS.Clone(),
		ClientName:       "zlink",
		Dialer:           net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: idleCheck},
		ConnWriteTimeout: cfg.OpTimeout,
		DisableCache:     true,
		// No transparent retry of read-only commands on a new connection:
		// every caller here already retries on its own schedule under its
		// deadline, and rueidis v1.0.79 recycles a command that succeeded
		// on its retry while the broken connection's writer may still be
		// reading it (a data race -race reported in a Redis-cut test).
		DisableRetry: true,
	})
	if err != nil {
		return nil, fmt.Errorf("zlink: connect redis %s%s: %w%s", cfg.Addr, overTLS(cfg), err, dialHint(cfg, err))
	}
	r := &Redis{cfg: cfg, client: client}
	r.validated = validated{b: r}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	pctx, cancel := r.opCtx(ctx)
	defer cancel()
	if err := client.Do(pctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		r.cancel()
		return nil, fmt.Errorf("zlink: ping redis %s%s: %w%s", cfg.Addr, overTLS(cfg), err, dialHint(cfg, err))
	}
	cluster := client.Mode() == rueidis.ClientModeCluster
	if cluster && cfg.DB != 0 {
		client.Close()
		r.cancel()
		return nil, invalidf("redis %s is a Cluster node: db %d does not exist there (only 0)", cfg.Addr, cfg.DB)
	}
	r.replicas.init(cfg, cluster)
	if cfg.ReplicaAcks == ReplicaAcksAuto {
		if err := r.refreshReplicas(pctx); err != nil {
			r.cfg.Logger.Warn().Err(err).Msg("location: cannot tell which redis masters have replicas; Spot directory writes wait only on those known")
		}
		r.wg.Add(1)
		go r.watchReplicas()
	}
	return r, nil
}

func overTLS(cfg RedisConfig) string {
	if cfg.TLS != nil {
		return " over TLS"
	}
	return ""
}

// dialHint explains the usual causes of a failed first contact, the TLS
// mismatches in particular, whose raw errors (a reset, a timeout) say little.
func dialHint(cfg RedisConfig, err error) string {
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &verify):
		return " (the server certificate is not trusted by the configured CA or does not name the host)"
	case cfg.TLS == nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)):
		return " (the server closed the connection without a reply: if it serves TLS only, use rediss://)"
	case cfg.TLS != nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		strings.Contains(err.Error(), "tls: certificate required")):
		return " (the server closed the connection during or right after the TLS handshake: does it require a client certificate (cert=, key=) signed by its CA?)"
	case len(cfg.Addrs) > 0 && strings.Contains(err.Error(), "cluster support disabled"):
		return " (more addresses (addr=) name nodes of a Redis Cluster; a standalone server takes one)"
	case cfg.TLS != nil && errors.Is(err, context.DeadlineExceeded):
		return " (no TLS handshake completed in time: unreachable, or the server does not speak TLS (redis://)?)"
	}
	return ""
}

// Close implements Store.
func (r *Redis) Close() error {
	r.once.Do(func() {
		r.mu.Lock()
		r.closed.Store(true)
		r.mu.Unlock()
		r.cancel()
		r.wg.Wait()
		r.client.Close()
	})
	return nil
}

// opCtx bounds an operation: a ctx without deadline gets cfg.OpTimeout;
// one with a deadline is used as it is (a context of its own would cost
// an allocation and a registration with its parent per store step, and
// the command ends when it returns anyway).
func (r *Redis) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, noCancel
	}
	return context.WithTimeout(ctx, r.cfg.OpTimeout)
}

func noCancel() {}

func (r *Redis) closedNow() bool { return r.closed.Load() }

func (r *Redis) wrap(op string, err error) error {
	if errors.Is(err, rueidis.ErrClosing) {
		return ErrClosed
	}
	r.errs.Add(1)
	return fmt.Errorf("zlink: redis %s: %w", op, err)
}

// Key layout (see doc.go).
func (r *Redis) meshTag(mesh string) string    { return r.cfg.Prefix + ":{mesh:" + mesh + "}:" }
func (r *Redis) nodePrefix(mesh string) string { return r.meshTag(mesh) + "node:" }
func (r *Redis) eventsChannel(mesh string) string {
	return r.meshTag(mesh) + "events"
}

// descKeys are the keys every descriptor script of mesh names, in this
// order after the node key (see doc.go).
func (r *Redis) descKeys(mesh string) (live, changed, gone, rev string) {
	t := r.meshTag(mesh)
	return t + "live", t + "changed", t + "gone", t + "rev"
}
func (r *Redis) spotKey(mesh, kind, id string) string {
	return r.cfg.Prefix + ":{spot:" + mesh + ":" + kind + ":" + id + "}"
}
func (r *Redis) spotLeaseKeys(l SpotLease) (lease, tomb string) {
	tag := r.cfg.Prefix + ":{spotlease:" + l.Mesh + ":" + l.RID + "}:"
	return tag + u64(l.Generation), tag + "tomb:" + u64(l.Generation)
}
func (r *Redis) fanoutTag(channel string) string { return r.cfg.Prefix + ":{fanout:" + channel + "}:" }
func (r *Redis) pubPrefix(channel string) string { return r.fanoutTag(channel) + "pub:" }
func (r *Redis) pubsKey(channel string) string   { return r.fanoutTag(channel) + "pubs" }

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

func ttlMillis(ttl time.Duration) string { return strconv.FormatInt(ttl.Milliseconds(), 10) }

// listRecords reads every live record of an index (the Lua script prunes
// members whose key expired), decodes and checks each against its key,
// skips (and reports) the corrupt ones and sorts the rest by RID.
func listRecords[T any](ctx context.Context, r *Redis, what, indexKey, prefix string,
	decode func(rid, gen, rev, blob string) (T, error), rid func(T) string) ([]T, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	f, err := listScript.Exec(ctx, r.client, []string{indexKey},
		[]string{prefix, strconv.Itoa(maxNameLen), strconv.Itoa(maxRecordBytes)}).AsStrSlice()
	if err != nil {
		return nil, r.wrap(what, err)
	}
	if len(f)%4 != 0 {
		return nil, fmt.Errorf("zlink: redis %s: reply of %d fields", what, len(f))
	}
	out := make([]T, 0, len(f)/4)
	for i := 0; i < len(f); i += 4 {
		v, err := decode(f[i], f[i+1], f[i+2], f[i+3])
		if err != nil {
			r.corrupt.report(r.cfg.Logger, prefix+f[i], err)
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(rid(a), rid(b)) })
	return out, nil
}

// publisherAt is descriptorAt for a publisher key of channel.
func publisherAt(channel, rid, gen, blob string) (Publisher, error) {
	p, err := decodePublisher(blob)
	if err != nil {
		return Publisher{}, err
	}
	if p.Channel != channel || p.RID != rid {
		return Publisher{}, corruptf("publisher %.64s/%.64s stored under %s/%.64s", p.Channel, p.RID, channel, rid)
	}
	if gen != u64(p.Generation) {
		return Publisher{}, corruptf("publisher %s/%s: key field gen %.24q, record generation %d", channel, rid, gen, p.Generation)
	}
	return p, nil
}
