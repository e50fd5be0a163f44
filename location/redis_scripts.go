package location

import "github.com/redis/rueidis"

// Lua scripts: every compare-and-set runs atomically inside Redis. All keys a
// script touches share one hash tag ({mesh:<MeshName>} or
// {fanout:<Channel>}), so they live in one Cluster slot. Generations and
// epochs travel as decimal strings and are compared as strings (Lua numbers
// are doubles and would lose uint64 precision).

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

// KEYS[1] item, KEYS[2] index. ARGV: 1 gen, 2 ttl ms, 3 rid. Returns 1 or 0.
var renewScript = rueidis.NewLuaScript(`
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
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

// KEYS[1] spot record. ARGV: 1 node key prefix, 2 rid, 3 gen.
// Returns {status, owner, gen, epoch}; status is ok, owned, nolease or
// corrupt (the stored epoch is missing under an owner, or not a decimal in
// 1..999999999999999, so the next one could not be computed exactly; the
// record is left alone).
var claimScript = rueidis.NewLuaScript(luaClip + `
if redis.call('HGET', ARGV[1] .. ARGV[2], 'gen') ~= ARGV[3] then return {'nolease', '', '', ''} end
local rec = redis.call('HMGET', KEYS[1], 'owner', 'gen', 'epoch')
local owner, gen, epoch = rec[1], rec[2], rec[3]
local owned = owner and owner ~= ''
if (epoch or owned) and not (epoch and #epoch <= 15 and string.match(epoch, '^[1-9][0-9]*$')) then
  return {'corrupt', clip(owner or '', 256), clip(gen or '', 24), clip(epoch or '', 24)}
end
if owned then
  if owner == ARGV[2] and gen == ARGV[3] then return {'ok', owner, gen, epoch} end
  if redis.call('HGET', ARGV[1] .. owner, 'gen') == gen then
    return {'owned', clip(owner, 256), clip(gen or '', 24), epoch}
  end
end
local e = '1'
if epoch then e = string.format('%.0f', tonumber(epoch) + 1) end
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'gen', ARGV[3], 'epoch', e)
return {'ok', ARGV[2], ARGV[3], e}
`)

// KEYS[1] spot record. ARGV: 1 node key prefix, 2 from rid, 3 from gen,
// 4 from epoch, 5 to rid, 6 to gen. Returns {status, owner, gen, epoch};
// status is ok, fenced or nolease.
var transferScript = rueidis.NewLuaScript(`
local rec = redis.call('HMGET', KEYS[1], 'owner', 'gen', 'epoch')
if rec[1] ~= ARGV[2] or rec[2] ~= ARGV[3] or rec[3] ~= ARGV[4] then return {'fenced', '', '', ''} end
if redis.call('HGET', ARGV[1] .. ARGV[2], 'gen') ~= ARGV[3] then return {'fenced', '', '', ''} end
if redis.call('HGET', ARGV[1] .. ARGV[5], 'gen') ~= ARGV[6] then return {'nolease', '', '', ''} end
local e = string.format('%.0f', tonumber(ARGV[4]) + 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[5], 'gen', ARGV[6], 'epoch', e)
return {'ok', ARGV[5], ARGV[6], e}
`)

// KEYS[1] spot record. ARGV: 1 rid, 2 gen, 3 epoch. Keeps the epoch and
// clears the owner. Returns 1 or 0.
var releaseScript = rueidis.NewLuaScript(`
local rec = redis.call('HMGET', KEYS[1], 'owner', 'gen', 'epoch')
if rec[1] ~= ARGV[1] or rec[2] ~= ARGV[2] or rec[3] ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'owner', '', 'gen', '')
return 1
`)

// KEYS[1] spot record. ARGV: 1 node key prefix. Returns {owner, gen, epoch}
// of a live owner (long values clipped; three empty strings when the
// record is not a hash), or an empty array.
var ownerScript = rueidis.NewLuaScriptReadOnly(luaClip + `
local rec = redis.pcall('HMGET', KEYS[1], 'owner', 'gen', 'epoch')
if rec.err then return {'', '', ''} end
if not rec[1] or rec[1] == '' then return {} end
local live = redis.pcall('HGET', ARGV[1] .. rec[1], 'gen')
if type(live) == 'table' or live ~= rec[2] then return {} end
return {clip(rec[1], 256), clip(rec[2] or '', 24), clip(rec[3] or '', 24)}
`)
