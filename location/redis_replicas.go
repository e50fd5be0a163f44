package location

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// replicaTracker knows which masters need WAIT 1 after a Spot directory
// write (RedisConfig.ReplicaAcks). Safe for concurrent use.
type replicaTracker struct {
	mode     ReplicaAcks
	cluster  bool
	fallback string // host of RedisConfig.Addr, for CLUSTER SLOTS entries without one

	mu    sync.RWMutex
	seen  map[string]struct{} // masters ever seen with a replica; "" is a standalone server
	slots []slotRange         // Cluster: the masters' slot ranges, sorted
}

type slotRange struct {
	from, to uint16
	master   string // host:port
}

func (t *replicaTracker) init(cfg RedisConfig, cluster bool) {
	t.mode, t.cluster = cfg.ReplicaAcks, cluster
	t.fallback, _, _ = net.SplitHostPort(cfg.Addr)
	t.seen = make(map[string]struct{})
}

// needWait reports whether a write to key must be followed by WAIT 1.
func (t *replicaTracker) needWait(key string) bool {
	switch t.mode {
	case ReplicaAcksAlways:
		return true
	case ReplicaAcksNever:
		return false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.seen) == 0 {
		return false
	}
	if !t.cluster {
		return true
	}
	slot := keySlot(key)
	i := sort.Search(len(t.slots), func(i int) bool { return t.slots[i].to >= slot })
	if i < len(t.slots) && t.slots[i].from <= slot {
		_, ok := t.seen[t.slots[i].master]
		return ok
	}
	return true // slot map unknown, and some master has replicas: wait
}

func (t *replicaTracker) update(slots []slotRange, replicated []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slots != nil {
		t.slots = slots
	}
	for _, m := range replicated {
		t.seen[m] = struct{}{}
	}
}

// watchReplicas re-reads which masters have replicas every ReplicaRefresh
// until Close.
func (r *Redis) watchReplicas() {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.ReplicaRefresh)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(r.ctx, r.cfg.OpTimeout)
		err := r.refreshReplicas(ctx)
		cancel()
		if err != nil && r.ctx.Err() == nil {
			r.cfg.Logger.Debug().Err(err).Msg("location: redis replica check failed; keeping what is known")
		}
	}
}

// refreshReplicas reads INFO replication of the standalone server, or
// CLUSTER SLOTS and INFO replication of every Cluster master, and marks the
// masters with replicas (connected ones, or for a Cluster also listed ones).
func (r *Redis) refreshReplicas(ctx context.Context) error {
	if !r.replicas.cluster {
		n, err := connectedReplicas(ctx, r.client)
		if err != nil {
			return err
		}
		if n > 0 {
			r.replicas.update(nil, []string{""})
		}
		return nil
	}
	reply, err := r.client.Do(ctx, r.client.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return fmt.Errorf("zlink: redis cluster slots: %w", err)
	}
	var slots []slotRange
	var replicated []string
	masters := make(map[string]struct{})
	for _, entry := range reply {
		f, err := entry.ToArray()
		if err != nil || len(f) < 3 {
			return fmt.Errorf("zlink: redis cluster slots: malformed entry")
		}
		from, err1 := f[0].AsInt64()
		to, err2 := f[1].AsInt64()
		master, err3 := r.replicas.nodeAddr(f[2])
		if err1 != nil || err2 != nil || err3 != nil || from < 0 || to < from || to >= 16384 {
			return fmt.Errorf("zlink: redis cluster slots: malformed range")
		}
		slots = append(slots, slotRange{uint16(from), uint16(to), master})
		masters[master] = struct{}{}
		if len(f) > 3 { // replicas listed for this range
			replicated = append(replicated, master)
		}
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].from < slots[j].from })
	nodes := r.client.Nodes()
	var errs []error
	for m := range masters {
		c, ok := nodes[m]
		if !ok {
			errs = append(errs, fmt.Errorf("zlink: redis cluster master %s not connected yet", m))
			continue
		}
		n, err := connectedReplicas(ctx, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			continue
		}
		if n > 0 {
			replicated = append(replicated, m)
		}
	}
	r.replicas.update(slots, replicated)
	return errors.Join(errs...)
}

// nodeAddr is host:port of a CLUSTER SLOTS node entry ([ip, port, ...]);
// an empty ip means the host we dialled.
func (t *replicaTracker) nodeAddr(m rueidis.RedisMessage) (string, error) {
	f, err := m.ToArray()
	if err != nil || len(f) < 2 {
		return "", fmt.Errorf("malformed node")
	}
	host, err := f[0].ToString()
	if err != nil {
		return "", err
	}
	port, err := f[1].AsInt64()
	if err != nil {
		return "", err
	}
	if host == "" {
		host = t.fallback
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10)), nil
}

// connectedReplicas reads connected_slaves from INFO replication.
func connectedReplicas(ctx context.Context, c rueidis.Client) (int, error) {
	info, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		return 0, fmt.Errorf("zlink: redis info replication: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "connected_slaves:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("zlink: redis info replication: connected_slaves %.24q", v)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("zlink: redis info replication: no connected_slaves")
}

// redirectBackoff caps the pause between the attempts of a confirmed
// write that the Cluster redirects (MOVED, ASK, TRYAGAIN, CLUSTERDOWN)
// while the client refreshes its slot map (after a failover that takes up
// to a second): the write is retried until its context ends.
const redirectBackoff = 100 * time.Millisecond

// spotExec runs a Spot directory script on the master of keys[0]'s slot.
// When that master needs confirmation (replicaTracker), WAIT 1 follows on
// the same connection, pipelined; confirm is then nil if a replica
// acknowledged everything the connection wrote, else an error matching
// ErrUnconfirmed. The caller applies confirm only when the script wrote.
func (r *Redis) spotExec(ctx context.Context, s *luaScript, keys, args []string) (reply rueidis.RedisResult, confirm error) {
	if !r.replicas.needWait(keys[0]) {
		reply = r.client.Do(ctx, s.cmd(r.client.B(), keys, args, false))
		if noScript(reply.Error()) {
			reply = r.client.Do(ctx, s.cmd(r.client.B(), keys, args, true))
		}
		return reply, nil
	}
	var rs []rueidis.RedisResult
	var waitMs int64
	for attempt := 1; ; attempt++ {
		wait := r.cfg.ReplicaTimeout
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl)*9/10) // leave time to read the answer
		}
		waitMs = max(wait.Milliseconds(), 1) // WAIT 0 would block forever
		_ = r.client.Dedicated(func(c rueidis.DedicatedClient) error {
			rs = c.DoMulti(ctx, s.cmd(c.B(), keys, args, false), c.B().Wait().Numreplicas(1).Timeout(waitMs).Build())
			if noScript(rs[0].Error()) {
				rs = c.DoMulti(ctx, s.cmd(c.B(), keys, args, true), c.B().Wait().Numreplicas(1).Timeout(waitMs).Build())
			}
			return nil
		})
		if !redirected(rs[0].Error()) || !sleepCtx(ctx, min(time.Duration(attempt)*20*time.Millisecond, redirectBackoff)) {
			break
		}
	}
	r.waits.Add(1)
	n, err := rs[1].AsInt64()
	switch {
	case err != nil:
		confirm = fmt.Errorf("%w: WAIT: %w", ErrUnconfirmed, err)
	case n < 1:
		confirm = fmt.Errorf("%w: no replica acknowledged within %dms", ErrUnconfirmed, waitMs)
	}
	return rs[0], confirm
}

// unconfirmed counts a write no replica confirmed and adds context to its
// ErrUnconfirmed error.
func (r *Redis) unconfirmed(what string, confirm error) error {
	r.unconf.Add(1)
	return fmt.Errorf("zlink: redis %s: %w", what, confirm)
}

func noScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}

func redirected(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	_, moved := re.IsMoved()
	_, ask := re.IsAsk()
	return moved || ask || re.IsTryAgain() || re.IsClusterDown()
}

// sleepCtx waits d unless ctx ends first; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// keySlot is the Redis Cluster slot of key: CRC16 (XMODEM) of its hash tag
// (the part between the first '{' and the next '}', if not empty) or of
// the whole key, modulo 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
