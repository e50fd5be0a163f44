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
	cfg    RedisConfig
	client rueidis.Client

	ctx    context.Context // ended by Close; parent of every Watch
	cancel context.CancelFunc
	wg     sync.WaitGroup // Watch and replica-check goroutines; Add only under mu while !closed (or in NewRedis)
	mu     sync.Mutex     // orders wg.Add in Watch against Close
	closed atomic.Bool
	once   sync.Once

	corrupt  corruptLog     // records skipped or refused as ErrCorrupt
	replicas replicaTracker // which masters need WAIT after a Spot directory write
	waits    atomic.Uint64  // Spot directory writes followed by WAIT
	unconf   atomic.Uint64  // of which no replica confirmed
	errs     atomic.Uint64  // operations Redis did not answer as asked (wrap)
}

var _ Store = (*Redis)(nil)

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
		Dialer:           net.Dialer{Timeout: cfg.DialTimeout},
		ConnWriteTimeout: cfg.OpTimeout,
		DisableCache:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("zlink: connect redis %s%s: %w%s", cfg.Addr, overTLS(cfg), err, dialHint(cfg, err))
	}
	r := &Redis{cfg: cfg, client: client}
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

// opCtx bounds an operation: a ctx without deadline gets cfg.OpTimeout.
func (r *Redis) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.cfg.OpTimeout)
}

func (r *Redis) check() error {
	if r.closed.Load() {
		return ErrClosed
	}
	return nil
}

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
func (r *Redis) nodesKey(mesh string) string   { return r.meshTag(mesh) + "nodes" }
func (r *Redis) eventsChannel(mesh string) string {
	return r.meshTag(mesh) + "events"
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

// PutDescriptor implements Store.
func (r *Redis) PutDescriptor(ctx context.Context, d Descriptor, ttl time.Duration) error {
	if err := d.validate(); err != nil {
		return err
	}
	if err := validTTL(ttl); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	blob, err := encodeDescriptor(d)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	res, err := putScript.Exec(ctx, r.client,
		[]string{r.nodePrefix(d.Mesh) + d.RID, r.nodesKey(d.Mesh)},
		[]string{u64(d.Generation), u64(d.Revision), blob, ttlMillis(ttl), d.RID, r.eventsChannel(d.Mesh)},
	).ToString()
	if err != nil {
		return r.wrap("put descriptor", err)
	}
	if res == "stale" {
		return fmt.Errorf("%w: descriptor %s/%s revision %d below stored", ErrFenced, d.Mesh, d.RID, d.Revision)
	}
	return nil
}

// RenewDescriptor implements Store.
func (r *Redis) RenewDescriptor(ctx context.Context, mesh, rid string, gen uint64, ttl time.Duration) error {
	if err := validMesh(mesh); err != nil {
		return err
	}
	if err := validTTL(ttl); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	n, err := renewScript.Exec(ctx, r.client,
		[]string{r.nodePrefix(mesh) + rid, r.nodesKey(mesh)},
		[]string{u64(gen), ttlMillis(ttl), rid},
	).AsInt64()
	if err != nil {
		return r.wrap("renew descriptor", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: descriptor %s/%s generation %d", ErrNotFound, mesh, rid, gen)
	}
	return nil
}

// DeleteDescriptor implements Store.
func (r *Redis) DeleteDescriptor(ctx context.Context, mesh, rid string, gen uint64) error {
	if err := validMesh(mesh); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	n, err := deleteScript.Exec(ctx, r.client,
		[]string{r.nodePrefix(mesh) + rid, r.nodesKey(mesh)},
		[]string{u64(gen), rid, r.eventsChannel(mesh)},
	).AsInt64()
	if err != nil {
		return r.wrap("delete descriptor", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: descriptor %s/%s generation %d", ErrNotFound, mesh, rid, gen)
	}
	return nil
}

// ListDescriptors implements Store.
func (r *Redis) ListDescriptors(ctx context.Context, mesh string) ([]Descriptor, error) {
	if err := validMesh(mesh); err != nil {
		return nil, err
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return listRecords(ctx, r, "list descriptors", r.nodesKey(mesh), r.nodePrefix(mesh),
		func(rid, gen, rev, blob string) (Descriptor, error) { return descriptorAt(mesh, rid, gen, rev, blob) },
		func(d Descriptor) string { return d.RID })
}

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

// descriptorAt decodes the fields of the node key of (mesh, rid) and checks
// them against the key and against each other: the scripts fence with the
// gen and rev fields, readers use the blob, so they must agree.
func descriptorAt(mesh, rid, gen, rev, blob string) (Descriptor, error) {
	d, err := decodeDescriptor(blob)
	if err != nil {
		return Descriptor{}, err
	}
	if d.Mesh != mesh || d.RID != rid {
		return Descriptor{}, corruptf("descriptor %.64s/%.64s stored under %s/%.64s", d.Mesh, d.RID, mesh, rid)
	}
	if gen != u64(d.Generation) || rev != u64(d.Revision) {
		return Descriptor{}, corruptf("descriptor %s/%s: key fields gen %.24q rev %.24q, record generation %d revision %d",
			mesh, rid, gen, rev, d.Generation, d.Revision)
	}
	return d, nil
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

// GetDescriptor implements Store.
func (r *Redis) GetDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error) {
	if err := validMesh(mesh); err != nil {
		return Descriptor{}, err
	}
	if err := r.check(); err != nil {
		return Descriptor{}, err
	}
	if rid == "" || len(rid) > maxNameLen {
		return Descriptor{}, fmt.Errorf("%w: descriptor %s/%.64s", ErrNotFound, mesh, rid)
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	key := r.nodePrefix(mesh) + rid
	f, err := getScript.Exec(ctx, r.client, []string{key}, []string{strconv.Itoa(maxRecordBytes)}).AsStrSlice()
	if err != nil {
		return Descriptor{}, r.wrap("get descriptor", err)
	}
	if len(f) == 0 {
		return Descriptor{}, fmt.Errorf("%w: descriptor %s/%s", ErrNotFound, mesh, rid)
	}
	if len(f) != 3 {
		return Descriptor{}, fmt.Errorf("zlink: redis get descriptor: reply of %d fields", len(f))
	}
	d, err := descriptorAt(mesh, rid, f[0], f[1], f[2])
	if err != nil {
		r.corrupt.report(r.cfg.Logger, key, err)
		return Descriptor{}, err
	}
	return d, nil
}
