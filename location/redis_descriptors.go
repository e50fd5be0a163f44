package location

// MeshNode descriptors on the Redis Location Store: the records, the
// index of live leases, the change log and the mesh revision (see doc.go,
// "Redis keys").

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

const (
	// goneKeep is how many removals the change log remembers; a reader
	// further behind gets a Full answer.
	goneKeep = 1024
	// expireBatch bounds the lapsed leases one ExpireDescriptors removes.
	expireBatch = 64
	// indexTTL is the expiry of a mesh's index keys, set again by a change
	// or a sweep once less than half of it is left: the keys of a mesh
	// nobody runs go away.
	indexTTL = time.Hour
)

// luaDesc holds the helpers of the descriptor scripts. Keys are passed
// explicitly; every key of a mesh carries its hash tag.
const luaDesc = `
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function keepalive(keys, ms)
  for _, k in ipairs(keys) do
    if redis.call('PTTL', k) < tonumber(ms) / 2 then redis.call('PEXPIRE', k, ms) end
  end
end
local function bump(rev, epoch)
  local e = redis.call('HGET', rev, 'epoch')
  if not e then
    e = epoch
    redis.call('HSET', rev, 'epoch', e)
  end
  return e, redis.call('HINCRBY', rev, 'seq', 1)
end
local function removed(live, changed, gone, rev, rid, epoch, keep, idxttl, channel)
  redis.call('ZREM', live, rid)
  redis.call('ZREM', changed, rid)
  local e, seq = bump(rev, epoch)
  redis.call('ZADD', gone, seq, rid)
  local n = redis.call('ZCARD', gone)
  if n > keep then
    local old = redis.call('ZPOPMIN', gone, n - keep)
    redis.call('HSET', rev, 'floor', old[#old])
  end
  keepalive({live, changed, gone, rev}, idxttl)
  redis.call('PUBLISH', channel, 'd ' .. e .. ' ' .. seq .. ' ' .. rid)
end
`

// KEYS: 1 node, 2 live, 3 changed, 4 gone, 5 rev. ARGV: 1 gen, 2 rev, 3
// blob, 4 ttl ms, 5 rid, 6 event channel, 7 epoch (used when the mesh has
// none yet), 8 index ttl ms. Returns 'ok' or 'stale' (a lower revision of
// the same generation). A changed record moves the mesh revision, enters
// the change log and is pushed; a renewal by put does neither.
var descPutScript = rueidis.NewLuaScript(luaLess + luaDesc + `
local old = redis.call('HMGET', KEYS[1], 'gen', 'rev', 'd')
if old[1] == ARGV[1] and old[2] and lt(ARGV[2], old[2]) then
  return 'stale'
end
redis.call('HSET', KEYS[1], 'gen', ARGV[1], 'rev', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], nowms() + tonumber(ARGV[4]), ARGV[5])
if old[3] ~= ARGV[3] then
  local e, seq = bump(KEYS[5], ARGV[7])
  redis.call('ZADD', KEYS[3], seq, ARGV[5])
  redis.call('ZREM', KEYS[4], ARGV[5])
  keepalive({KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, ARGV[8])
  redis.call('PUBLISH', ARGV[6], 'p ' .. e .. ' ' .. seq .. ' ' .. ARGV[5])
end
return 'ok'
`)

// KEYS: 1 node, 2 live. ARGV: 1 gen, 2 ttl ms, 3 rid. Returns 1 or 0 (gone
// or another generation). Four commands whatever the mesh's size.
var descRenewScript = rueidis.NewLuaScript(luaDesc + `
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], nowms() + tonumber(ARGV[2]), ARGV[3])
return 1
`)

// KEYS: 1 node, 2 live, 3 changed, 4 gone, 5 rev. ARGV: 1 gen, 2 rid, 3
// event channel, 4 epoch, 5 removals kept, 6 index ttl ms. Returns 1 or 0.
var descDeleteScript = rueidis.NewLuaScript(luaDesc + `
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
removed(KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[2], ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[3])
return 1
`)

// KEYS: 1 live, 2 changed, 3 gone, 4 rev. ARGV: 1 node key prefix, 2 event
// channel, 3 epoch, 4 most removals, 5 removals kept, 6 index ttl ms.
// Removes the members of live whose lease end passed and whose node key
// is gone (a node key still there is indexed again with its own expiry),
// each as a delete. Returns {removed, live members}. With nothing lapsed:
// TIME, one range read by score, ZCARD and PTTL.
var descExpireScript = rueidis.NewLuaScript(luaDesc + `
local now = nowms()
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
local n = 0
for _, rid in ipairs(lapsed) do
  local left = redis.call('PTTL', ARGV[1] .. rid)
  if left > 0 then
    redis.call('ZADD', KEYS[1], now + left, rid)
  else
    if left == -1 then redis.call('DEL', ARGV[1] .. rid) end
    removed(KEYS[1], KEYS[2], KEYS[3], KEYS[4], rid, ARGV[3], tonumber(ARGV[5]), ARGV[6], ARGV[2])
    n = n + 1
  end
end
local live = redis.call('ZCARD', KEYS[1])
if live > 0 and redis.call('PTTL', KEYS[1]) < tonumber(ARGV[6]) / 2 then
  keepalive({KEYS[1], KEYS[2], KEYS[3], KEYS[4]}, ARGV[6])
end
return {n, live}
`)

// KEYS: 1 rev, 2 live, 3 changed, 4 gone. ARGV: 1 epoch and 2 seq of the
// reader's revision, 3 node key prefix, 4 max RID bytes, 5 max blob
// bytes, 6 '1' for a full listing. Returns {epoch, seq, 'full'|'delta',
// then rid, status, gen, rev, blob per record}: status 'p' (present), 'd'
// (gone) or 'x' (not a hash, or an oversized RID); values clipped. A full
// answer lists every member of live whose record exists; a delta the
// members of changed and gone above the reader's seq.
var descChangesScript = rueidis.NewLuaScriptReadOnly(luaClip + `
local m = redis.pcall('HMGET', KEYS[1], 'epoch', 'seq', 'floor')
if m.err then m = {} end
local epoch, seq, floor = m[1] or '', m[2] or '0', m[3] or '0'
local since = tonumber(ARGV[2])
local full = ARGV[6] == '1' or ARGV[1] ~= epoch or since > (tonumber(seq) or 0) or since < (tonumber(floor) or 0)
local out = {clip(epoch, 64), clip(seq, 24), 'delta'}
if full then out[3] = 'full' end
local maxrid, maxblob = tonumber(ARGV[4]), tonumber(ARGV[5])
local function emit(rid, st, gen, rev, d)
  out[#out + 1] = rid; out[#out + 1] = st; out[#out + 1] = gen; out[#out + 1] = rev; out[#out + 1] = d
end
local function read(rid)
  if #rid > maxrid then
    emit(clip(rid, maxrid), 'x', '', '', '')
    return
  end
  local rec = redis.pcall('HMGET', ARGV[3] .. rid, 'gen', 'rev', 'd')
  if rec.err then
    emit(rid, 'x', '', '', '')
  elseif not rec[1] and not rec[2] and not rec[3] then
    if not full then emit(rid, 'd', '', '', '') end
  else
    emit(rid, 'p', clip(rec[1] or '', 24), clip(rec[2] or '', 24), clip(rec[3] or '', maxblob))
  end
end
if full then
  for _, rid in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do read(rid) end
else
  local from = '(' .. ARGV[2]
  for _, rid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], from, '+inf')) do read(rid) end
  for _, rid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], from, '+inf')) do emit(clip(rid, maxrid), 'd', '', '', '') end
end
return out
`)

// newEpoch returns a fresh change-log epoch: 16 random hex digits. Every
// write offers a new one, taken only when the mesh has no change log (a
// log lost with an empty restart gets an epoch its readers never saw).
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// putDescriptor is Store.PutDescriptor behind validated.
func (r *Redis) putDescriptor(ctx context.Context, d Descriptor, ttl time.Duration) error {
	blob, err := encodeDescriptor(d)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	live, changed, gone, rev := r.descKeys(d.Mesh)
	res, err := descPutScript.Exec(ctx, r.client,
		[]string{r.nodePrefix(d.Mesh) + d.RID, live, changed, gone, rev},
		[]string{u64(d.Generation), u64(d.Revision), blob, ttlMillis(ttl), d.RID, r.eventsChannel(d.Mesh),
			newEpoch(), ttlMillis(max(indexTTL, 2*ttl))},
	).ToString()
	if err != nil {
		return r.wrap("put descriptor", err)
	}
	if res == "stale" {
		return fmt.Errorf("%w: descriptor %s/%s revision %d below stored", ErrFenced, d.Mesh, d.RID, d.Revision)
	}
	return nil
}

// renewDescriptor is Store.RenewDescriptor behind validated.
func (r *Redis) renewDescriptor(ctx context.Context, mesh, rid string, gen uint64, ttl time.Duration) error {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	live, _, _, _ := r.descKeys(mesh)
	n, err := descRenewScript.Exec(ctx, r.client,
		[]string{r.nodePrefix(mesh) + rid, live},
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

// deleteDescriptor is Store.DeleteDescriptor behind validated.
func (r *Redis) deleteDescriptor(ctx context.Context, mesh, rid string, gen uint64) error {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	live, changed, gone, rev := r.descKeys(mesh)
	n, err := descDeleteScript.Exec(ctx, r.client,
		[]string{r.nodePrefix(mesh) + rid, live, changed, gone, rev},
		[]string{u64(gen), rid, r.eventsChannel(mesh), newEpoch(), strconv.Itoa(goneKeep), ttlMillis(indexTTL)},
	).AsInt64()
	if err != nil {
		return r.wrap("delete descriptor", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: descriptor %s/%s generation %d", ErrNotFound, mesh, rid, gen)
	}
	return nil
}

// listDescriptors is Store.ListDescriptors behind validated.
func (r *Redis) listDescriptors(ctx context.Context, mesh string) ([]Descriptor, error) {
	ch, err := r.changes(ctx, mesh, MeshRevision{}, true)
	if err != nil {
		return nil, err
	}
	return ch.Put, nil
}

// descriptorRevision is Store.DescriptorRevision behind validated: one HMGET.
func (r *Redis) descriptorRevision(ctx context.Context, mesh string) (MeshRevision, error) {
	rev, err := r.revision(ctx, mesh)
	if err == nil {
		r.seen.note(mesh, rev)
	}
	return rev, err
}

// revision reads the mesh revision (without noting it for the watches).
func (r *Redis) revision(ctx context.Context, mesh string) (MeshRevision, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	_, _, _, key := r.descKeys(mesh)
	vals, err := r.client.Do(ctx, r.client.B().Hmget().Key(key).Field("epoch", "seq").Build()).ToArray()
	if err != nil {
		return MeshRevision{}, r.wrap("read mesh revision", err)
	}
	f := make([]string, 2)
	for i := range min(len(vals), 2) {
		s, err := vals[i].ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			return MeshRevision{}, r.wrap("read mesh revision", err)
		}
		f[i] = s
	}
	rev, err := parseRevision(f[0], f[1])
	if err != nil {
		r.corrupt.report(r.cfg.Logger, key, err)
	}
	return rev, err
}

// parseRevision checks the revision fields read back: an epoch of at most
// 64 bytes, a canonical decimal seq (none: 0).
func parseRevision(epoch, seq string) (MeshRevision, error) {
	if seq == "" {
		seq = "0"
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || len(epoch) > 64 || u64(n) != seq {
		return MeshRevision{}, corruptf("mesh revision epoch %.64q seq %.24q", epoch, seq)
	}
	return MeshRevision{Epoch: epoch, Seq: n}, nil
}

// descriptorChanges is Store.DescriptorChanges behind validated: one script
// on the mesh's slot, whose work grows with the records it returns.
func (r *Redis) descriptorChanges(ctx context.Context, mesh string, since MeshRevision) (DescriptorChanges, error) {
	ch, err := r.changes(ctx, mesh, since, false)
	if err == nil {
		r.seen.note(mesh, ch.Revision)
	}
	return ch, err
}

// changes runs the changes script (full: list every live descriptor),
// decodes and checks every record against its key, reports and leaves out
// the corrupt ones (a delta counts them gone) and sorts the rest.
func (r *Redis) changes(ctx context.Context, mesh string, since MeshRevision, full bool) (DescriptorChanges, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	live, changed, gone, rev := r.descKeys(mesh)
	flag := ""
	if full {
		flag = "1"
	}
	prefix := r.nodePrefix(mesh)
	f, err := descChangesScript.Exec(ctx, r.client, []string{rev, live, changed, gone},
		[]string{since.Epoch, u64(since.Seq), prefix, strconv.Itoa(maxNameLen), strconv.Itoa(maxRecordBytes), flag}).AsStrSlice()
	if err != nil {
		return DescriptorChanges{}, r.wrap("read descriptor changes", err)
	}
	if len(f) < 3 || (len(f)-3)%5 != 0 {
		return DescriptorChanges{}, fmt.Errorf("zlink: redis read descriptor changes: reply of %d fields", len(f))
	}
	var out DescriptorChanges
	out.Revision, err = parseRevision(f[0], f[1])
	if err != nil {
		r.corrupt.report(r.cfg.Logger, rev, err)
		return DescriptorChanges{}, err
	}
	out.Full = f[2] == "full"
	for i := 3; i < len(f); i += 5 {
		rid, st := f[i], f[i+1]
		switch st {
		case "p":
			d, err := descriptorAt(mesh, rid, f[i+2], f[i+3], f[i+4])
			if err == nil {
				out.Put = append(out.Put, d)
				continue
			}
			r.corrupt.report(r.cfg.Logger, prefix+rid, err)
		case "x":
			r.corrupt.report(r.cfg.Logger, prefix+rid, corruptf("descriptor %s/%.64s: not a hash, or RID too long", mesh, rid))
		}
		if !out.Full && rid != "" && len(rid) <= maxNameLen {
			out.Gone = append(out.Gone, rid)
		}
	}
	slices.SortFunc(out.Put, func(a, b Descriptor) int { return cmp.Compare(a.RID, b.RID) })
	slices.Sort(out.Gone)
	return out, nil
}

// expireDescriptors is Store.ExpireDescriptors behind validated.
func (r *Redis) expireDescriptors(ctx context.Context, mesh string) (removed, live int, err error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	liveKey, changed, gone, rev := r.descKeys(mesh)
	n, err := descExpireScript.Exec(ctx, r.client, []string{liveKey, changed, gone, rev},
		[]string{r.nodePrefix(mesh), r.eventsChannel(mesh), newEpoch(), strconv.Itoa(expireBatch),
			strconv.Itoa(goneKeep), ttlMillis(indexTTL)}).AsIntSlice()
	if err != nil {
		return 0, 0, r.wrap("expire descriptors", err)
	}
	if len(n) != 2 {
		return 0, 0, fmt.Errorf("zlink: redis expire descriptors: reply of %d fields", len(n))
	}
	return int(n[0]), int(n[1]), nil
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

// getDescriptor is Store.GetDescriptor behind validated.
func (r *Redis) getDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error) {
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

// seenRevisions remembers the last mesh revision a caller of the store
// read (DescriptorRevision, DescriptorChanges), so that a watch of the
// same mesh needs no read of its own while someone reads it anyway.
type seenRevisions struct {
	mu sync.Mutex // leaf: guards m
	m  map[string]seenRevision
}

type seenRevision struct {
	rev MeshRevision
	at  time.Time
}

func (s *seenRevisions) note(mesh string, rev MeshRevision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]seenRevision{}
	}
	s.m[mesh] = seenRevision{rev: rev, at: time.Now()}
}

// since returns the revision of mesh read at most d ago, if any.
func (s *seenRevisions) since(mesh string, d time.Duration) (seenRevision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[mesh]
	return v, ok && time.Since(v.at) < d
}
