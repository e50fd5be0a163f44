package location

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/rueidis"
)

// Lua scripts: every compare-and-set runs atomically inside Redis. All keys a
// script touches share one hash tag ({mesh:<MeshName>}, {fanout:<Channel>},
// {spot:<mesh>:<kind>:<id>} or {spotlease:<mesh>:<rid>}), so they live in
// one Cluster slot. Generations and epochs travel as decimal strings and are
// compared as strings (Lua numbers are doubles and would lose uint64
// precision); no script does arithmetic on them.

// luaClip cuts a value read from a record that may have been written by
// someone else to n+1 bytes, so a reply stays bounded and the Go side still
// sees that the value was too long.
const luaClip = `
local function clip(s, n)
  if s and #s > n then return string.sub(s, 1, n + 1) end
  return s
end
`

// luaLess compares two decimal strings without leading zeros.
const luaLess = `
local function lt(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
`

// KEYS[1] item, KEYS[2] index. ARGV: 1 gen, 2 rev (empty = no revision check),
// 3 blob, 4 ttl ms, 5 rid, 6 event channel (empty = no event).
// Returns 'ok' or 'stale' (lower revision of the same generation).
var putScript = rueidis.NewLuaScript(luaLess + `
local old = redis.call('HMGET', KEYS[1], 'gen', 'rev', 'd')
if ARGV[2] ~= '' and old[1] == ARGV[1] and old[2] and lt(ARGV[2], old[2]) then
  return 'stale'
end
redis.call('HSET', KEYS[1], 'gen', ARGV[1], 'rev', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[4]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
if ARGV[6] ~= '' and old[3] ~= ARGV[3] then
  redis.call('PUBLISH', ARGV[6], 'p ' .. ARGV[5])
end
return 'ok'
`)

// KEYS[1] item, KEYS[2] index. ARGV: 1 gen, 2 rid, 3 event channel (empty =
// none). Returns 1 or 0.
var deleteScript = rueidis.NewLuaScript(`
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], 'd ' .. ARGV[2]) end
return 1
`)

// KEYS[1] index. ARGV: 1 item key prefix, 2 max RID bytes, 3 max blob
// bytes. Returns {rid, gen, rev, blob, ...} of every existing item (a
// missing field, or every field of a key that is not a hash, as an empty
// string; long values clipped) and prunes index members whose item
// expired.
var listScript = rueidis.NewLuaScript(luaClip + `
local out = {}
local maxrid, maxblob = tonumber(ARGV[2]), tonumber(ARGV[3])
local function emit(rid, gen, rev, d)
  out[#out + 1] = rid; out[#out + 1] = gen; out[#out + 1] = rev; out[#out + 1] = d
end
for _, rid in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if #rid > maxrid then
    emit(clip(rid, maxrid), '', '', '')
  elseif redis.call('EXISTS', ARGV[1] .. rid) == 0 then
    redis.call('SREM', KEYS[1], rid)
  else
    local rec = redis.pcall('HMGET', ARGV[1] .. rid, 'gen', 'rev', 'd')
    if rec.err then
      emit(rid, '', '', '')
    else
      emit(rid, clip(rec[1] or '', 24), clip(rec[2] or '', 24), clip(rec[3] or '', maxblob))
    end
  end
end
return out
`)

// KEYS[1] item. ARGV: 1 max blob bytes. Returns {gen, rev, blob} (a
// missing field, or every field of a key that is not a hash, as an empty
// string; long values clipped), or {} when the key does not exist.
var getScript = rueidis.NewLuaScriptReadOnly(luaClip + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local rec = redis.pcall('HMGET', KEYS[1], 'gen', 'rev', 'd')
if rec.err then return {'', '', ''} end
return {clip(rec[1] or '', 24), clip(rec[2] or '', 24), clip(rec[3] or '', tonumber(ARGV[1]))}
`)

// luaScript is a Spot directory script, run by EVALSHA and, when the
// server lacks it (NOSCRIPT: after a restart or a failover), by EVAL. Unlike
// rueidis.Lua it can be pipelined with WAIT on one connection.
type luaScript struct{ body, sha string }

func newLuaScript(body string) *luaScript {
	sum := sha1.Sum([]byte(body))
	return &luaScript{body: body, sha: hex.EncodeToString(sum[:])}
}

func (s *luaScript) cmd(b rueidis.Builder, keys, args []string, eval bool) rueidis.Completed {
	if eval {
		return b.Eval().Script(s.body).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return b.Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// KEYS[1] lease, KEYS[2] tombstone. ARGV: 1 ttl ms. Returns 'ok', 'exists'
// or 'fenced' (tombstoned).
var spotLeaseCreateScript = newLuaScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 'fenced' end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 'ok' end
return 'exists'
`)

// KEYS[1] lease, KEYS[2] tombstone. ARGV: 1 ttl ms. Returns 'ok', 'gone'
// or 'fenced' (tombstoned). Never creates the lease.
var spotLeaseRenewScript = newLuaScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 'fenced' end
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 1 then return 'ok' end
return 'gone'
`)

// KEYS[1] lease (KEYS[2], the tombstone, is not touched). Returns 'ok'
// (deleted) or 'gone'.
var spotLeaseDeleteScript = newLuaScript(`
if redis.call('DEL', KEYS[1]) == 1 then return 'ok' end
return 'gone'
`)

// KEYS[1] lease, KEYS[2] tombstone. ARGV: 1 tombstone ttl ms. Returns
// 'live', or 'gone' after making sure the tombstone lives at least ARGV[1]
// ms (a longer-lived one, or one without expiry, is kept as it is).
var spotLeaseCheckScript = newLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 'live' end
local left = redis.call('PTTL', KEYS[2])
if left == -2 or (left >= 0 and left < tonumber(ARGV[1])) then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
end
return 'gone'
`)

// luaSpotRecord reads a Spot record: status 'absent' (fields ”, ”, '0'),
// 'ok' (owner, gen, epoch exactly as this package writes them: an epoch in
// canonical decimal of at most 15 digits; with an owner of at most 256
// bytes a canonical generation, without one an empty generation) or
// 'corrupt' (anything else, fields clipped; a key that is not a hash has
// three empty fields).
const luaSpotRecord = luaClip + `
local function spotrec(key)
  if redis.call('EXISTS', key) == 0 then return 'absent', '', '', '0' end
  local rec = redis.pcall('HMGET', key, 'owner', 'gen', 'epoch')
  if rec.err then return 'corrupt', '', '', '' end
  local owner, gen, epoch = rec[1] or '', rec[2] or '', rec[3] or ''
  local ok = #epoch <= 15 and string.match(epoch, '^[1-9][0-9]*$') ~= nil
  if owner == '' then
    ok = ok and gen == ''
  else
    ok = ok and #owner <= 256 and #gen <= 20 and string.match(gen, '^[1-9][0-9]*$') ~= nil
  end
  if not ok then return 'corrupt', clip(owner, 256), clip(gen, 24), clip(epoch, 24) end
  return 'ok', owner, gen, epoch
end
`

// KEYS[1] spot record. Returns {status, owner, gen, epoch} (luaSpotRecord).
var spotRecordScript = rueidis.NewLuaScriptReadOnly(luaSpotRecord + `
local st, owner, gen, epoch = spotrec(KEYS[1])
return {st, owner, gen, epoch}
`)

// luaRunID is the run identity of the serving Redis process: a failover
// (the promoted replica has its own) and a restart change it.
const luaRunID = `
local function runid()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''
end
`

// KEYS[1] any key of the slot. Returns the serving master's run_id.
var spotIncarnationScript = rueidis.NewLuaScriptReadOnly(luaRunID + `
return runid()
`)

// spotCASIncScript is spotCASScript whose reply has a fifth field: the
// run_id of the master that ran it.
var spotCASIncScript = newLuaScript(luaSpotRecord + luaRunID + `
local st, owner, gen, epoch = spotrec(KEYS[1])
if st == 'corrupt' then return {st, owner, gen, epoch, runid()} end
if owner ~= ARGV[1] or gen ~= ARGV[2] or epoch ~= ARGV[3] then return {'fenced', owner, gen, epoch, runid()} end
redis.call('HSET', KEYS[1], 'owner', ARGV[4], 'gen', ARGV[5], 'epoch', ARGV[6])
return {'done', ARGV[4], ARGV[5], ARGV[6], runid()}
`)

// KEYS[1] spot record, KEYS[2] its state (same hash tag). ARGV: 1-3 the
// writer's owner, gen, epoch (the record must still equal them), 4
// version, 5 data. Returns {'done', record} or {'fenced'|'corrupt',
// current record fields}.
var spotStatePutScript = newLuaScript(luaSpotRecord + `
local st, owner, gen, epoch = spotrec(KEYS[1])
if st == 'corrupt' then return {st, owner, gen, epoch} end
if owner == '' or owner ~= ARGV[1] or gen ~= ARGV[2] or epoch ~= ARGV[3] then return {'fenced', owner, gen, epoch} end
redis.call('HSET', KEYS[2], 'v', ARGV[4], 'epoch', ARGV[3], 'd', ARGV[5])
return {'done', owner, gen, epoch}
`)

// KEYS[1] spot record. ARGV: 1-3 expected owner, gen, epoch (an absent
// record is ”, ”, '0'; one without owner has gen ”), 4-6 the record to
// write. Claim, release (owner and gen ”, epoch kept) and transfer are this
// one compare-and-set. Returns {'done', written fields} or, writing nothing,
// {'fenced', current fields} or {'corrupt', clipped fields}.
var spotCASScript = newLuaScript(luaSpotRecord + `
local st, owner, gen, epoch = spotrec(KEYS[1])
if st == 'corrupt' then return {st, owner, gen, epoch} end
if owner ~= ARGV[1] or gen ~= ARGV[2] or epoch ~= ARGV[3] then return {'fenced', owner, gen, epoch} end
redis.call('HSET', KEYS[1], 'owner', ARGV[4], 'gen', ARGV[5], 'epoch', ARGV[6])
return {'done', ARGV[4], ARGV[5], ARGV[6]}
`)

// luaStateGet reads a Spot's state: {} when there is none (no key, or no
// data field), {'ok', version, epoch, data}, {'big', version, epoch, size}
// when the data is larger than max (checked before it is read), or
// {'corrupt'} for a key that is not a hash (version and epoch clipped).
// It needs luaClip before it.
const luaStateGet = `
local function stateget(key, max)
  if redis.call('EXISTS', key) == 0 then return {} end
  local n = redis.pcall('HSTRLEN', key, 'd')
  if type(n) ~= 'number' then return {'corrupt'} end
  if n == 0 and redis.call('HEXISTS', key, 'd') == 0 then return {} end
  local rec = redis.call('HMGET', key, 'v', 'epoch')
  local v, e = clip(rec[1] or '', 24), clip(rec[2] or '', 24)
  if n > max then return {'big', v, e, tostring(n)} end
  return {'ok', v, e, redis.call('HGET', key, 'd')}
end
`

// spotClaimStateScript is spotCASIncScript that, when it wrote, also
// reads the Spot's state (luaStateGet, as spotStateGetScript): KEYS[1] spot record,
// KEYS[2] its state (the same hash tag); ARGV 1-6 as spotCASScript, 7 max
// data bytes. Returns spotCASIncScript's five fields, then, when done, the
// state's: {'none'}, {'corrupt'}, {'ok', version, epoch, data} or {'big',
// version, epoch, size}. The state cannot change between the write and
// the read of one script, nor after it but by the new owner (a state write
// compares the record).
var spotClaimStateScript = newLuaScript(luaSpotRecord + luaRunID + luaStateGet + `
local st, owner, gen, epoch = spotrec(KEYS[1])
if st == 'corrupt' then return {st, owner, gen, epoch, runid()} end
if owner ~= ARGV[1] or gen ~= ARGV[2] or epoch ~= ARGV[3] then return {'fenced', owner, gen, epoch, runid()} end
redis.call('HSET', KEYS[1], 'owner', ARGV[4], 'gen', ARGV[5], 'epoch', ARGV[6])
local r = {'done', ARGV[4], ARGV[5], ARGV[6], runid()}
local s = stateget(KEYS[2], tonumber(ARGV[7]))
if #s == 0 then s = {'none'} end
for i = 1, #s do r[5 + i] = s[i] end
return r
`)

// KEYS[1] spot state. ARGV: 1 max data bytes. The data's size is checked
// here, before it is read, so an oversized value never leaves Redis.
// Returns {} when there is no state (no key, or no data field), {'ok',
// version, epoch, data}, {'big', version, epoch, size} when the data is
// larger than ARGV[1], or {'corrupt'} for a key that is not a hash
// (version and epoch clipped).
var spotStateGetScript = rueidis.NewLuaScriptReadOnly(luaClip + luaStateGet + `
return stateget(KEYS[1], tonumber(ARGV[1]))
`)

// spotClaimViewScript is spotRecordScript and spotStateEpochScript in one
// step: KEYS[1] spot record, KEYS[2] its state (the same hash tag).
// Returns {status, owner, gen, epoch} of the record (luaSpotRecord), then
// the state's status ('none', 'ok' or 'corrupt') and epoch.
var spotClaimViewScript = rueidis.NewLuaScriptReadOnly(luaSpotRecord + `
local st, owner, gen, epoch = spotrec(KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 0 then return {st, owner, gen, epoch, 'none', ''} end
local has = redis.pcall('HEXISTS', KEYS[2], 'd')
if type(has) ~= 'number' then return {st, owner, gen, epoch, 'corrupt', ''} end
if has == 0 then return {st, owner, gen, epoch, 'none', ''} end
return {st, owner, gen, epoch, 'ok', clip(redis.call('HGET', KEYS[2], 'epoch') or '', 24)}
`)

// KEYS[1] spot state. Returns {} when there is no state (as
// spotStateGetScript), {'ok', epoch} (clipped), or {'corrupt'} for a key
// that is not a hash. The data is not read.
var spotStateEpochScript = rueidis.NewLuaScriptReadOnly(luaClip + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local has = redis.pcall('HEXISTS', KEYS[1], 'd')
if type(has) ~= 'number' then return {'corrupt'} end
if has == 0 then return {} end
return {'ok', clip(redis.call('HGET', KEYS[1], 'epoch') or '', 24)}
`)
