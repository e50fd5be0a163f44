package location

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

var _ SpotReminders = (*Redis)(nil)
var _ SpotReminders = (*Memory)(nil)

// Reminder keys: the records of a Spot are one hash under the Spot's own
// hash tag (field name → "<seq> <due ms> <period ms> <payload>") with a
// registration counter beside it; the index parts of a kind are sorted
// sets under tags of their own, scored by due ms, with members
// reminderMember.
func (r *Redis) remKeys(mesh, kind, id string) (rec, hash, seq string) {
	k := r.spotKey(mesh, kind, id)
	return k, k + ":rem", k + ":remseq"
}

func (r *Redis) remIndexKey(mesh, kind string, part int) string {
	return r.cfg.Prefix + ":{rem:" + mesh + ":" + kind + ":" + strconv.Itoa(part) + "}"
}

// luaRemFence checks a fenced reminder write: ARGV[1] '1' when fenced,
// ARGV[2..4] the owner, gen, epoch. It returns nil when the write may go
// on, else the script's reply.
const luaRemFence = luaSpotRecord + `
local function remfence(key)
  if ARGV[1] ~= '1' then return nil end
  local st, owner, gen, epoch = spotrec(key)
  if st == 'corrupt' then return {st, owner, gen, epoch} end
  if owner == '' or owner ~= ARGV[2] or gen ~= ARGV[3] or epoch ~= ARGV[4] then return {'fenced', owner, gen, epoch} end
  return nil
end
`

// KEYS[1] spot record, KEYS[2] reminders, KEYS[3] counter. ARGV: 1-4 fence,
// 5 name, 6 due ms, 7 period ms, 8 payload, 9 max reminders. Returns
// {'done', seq, old seq or ”}, {'full'}, or a fence refusal.
var remPutScript = newLuaScript(luaRemFence + `
local f = remfence(KEYS[1])
if f then return f end
local old = redis.call('HGET', KEYS[2], ARGV[5])
if not old and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[9]) then return {'full'} end
local seq = tostring(redis.call('INCR', KEYS[3]))
redis.call('HSET', KEYS[2], ARGV[5], seq .. ' ' .. ARGV[6] .. ' ' .. ARGV[7] .. ' ' .. ARGV[8])
local oldseq = ''
if old then oldseq = string.match(old, '^(%d+) ') or '' end
return {'done', seq, oldseq}
`)

// KEYS[1] spot record, KEYS[2] reminders. ARGV: 1-4 fence, 5 name.
// Returns {'done', old seq}, {'none'} or a fence refusal.
var remDeleteScript = newLuaScript(luaRemFence + `
local f = remfence(KEYS[1])
if f then return f end
local old = redis.call('HGET', KEYS[2], ARGV[5])
if not old then return {'none'} end
redis.call('HDEL', KEYS[2], ARGV[5])
return {'done', string.match(old, '^(%d+) ') or ''}
`)

// KEYS[1] spot record, KEYS[2] reminders. ARGV: 1-4 fence ('1' and the
// owner), 5 name, 6 seq, 7 due ms, 8 next due ms (”: remove). Returns
// {'done'|'gone'|'fenced'|'corrupt', owner, gen, epoch}.
var remAdvanceScript = newLuaScript(luaRemFence + `
local f = remfence(KEYS[1])
if f then return f end
local v = redis.call('HGET', KEYS[2], ARGV[5])
local s, d, rest
if v then s, d, rest = string.match(v, '^(%d+) (%d+) (.*)$') end
if not s or s ~= ARGV[6] or d ~= ARGV[7] then return {'gone', ARGV[2], ARGV[3], ARGV[4]} end
if ARGV[8] == '' then
  redis.call('HDEL', KEYS[2], ARGV[5])
else
  redis.call('HSET', KEYS[2], ARGV[5], s .. ' ' .. ARGV[8] .. ' ' .. rest)
end
return {'done', ARGV[2], ARGV[3], ARGV[4]}
`)

// KEYS[1] index part. ARGV: 1 old member (” none), 2 new member, 3 due ms.
var remIndexScript = rueidis.NewLuaScript(`
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return 1
`)

// remFenceArgs are a write's first four arguments.
func remFenceArgs(spot Ownership) []string {
	if spot.OwnerRID == "" {
		return []string{"0", "", "", ""}
	}
	return []string{"1", spot.OwnerRID, genField(spot.OwnerGeneration), u64(spot.Epoch)}
}

// remRefusal turns a fence refusal reply into its error (nil when reply
// is not one).
func (r *Redis) remRefusal(spot Ownership, reply []string) error {
	if len(reply) != 4 || (reply[0] != "fenced" && reply[0] != "corrupt") {
		return nil
	}
	st, cur, err := r.spotReply(spot, reply)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	if st == "fenced" {
		return fenced(cur, spot)
	}
	return nil
}

// putReminder is SpotReminders.PutReminder behind validated: the record
// (fenced when spot names an owner), then the index.
func (r *Redis) putReminder(ctx context.Context, spot Ownership, rem Reminder) (Reminder, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	rec, hash, seqKey := r.remKeys(spot.Mesh, spot.Kind, spot.ID)
	due := rem.Due.UnixMilli()
	args := append(remFenceArgs(spot), rem.Name, strconv.FormatInt(due, 10),
		strconv.FormatInt(rem.Period.Milliseconds(), 10), string(rem.Payload), strconv.Itoa(MaxSpotReminders))
	res, confirm := r.spotExec(ctx, remPutScript, []string{rec, hash, seqKey}, args)
	reply, err := res.AsStrSlice()
	if err != nil {
		return Reminder{}, r.wrap("put reminder", err)
	}
	if err := r.remRefusal(spot, reply); err != nil {
		return Reminder{}, err
	}
	switch {
	case len(reply) == 1 && reply[0] == "full":
		return Reminder{}, invalidf("spot %s/%s holds %d reminders already", spot.Kind, spot.ID, MaxSpotReminders)
	case len(reply) != 3 || reply[0] != "done":
		return Reminder{}, fmt.Errorf("zlink: redis put reminder: reply %.64q", reply)
	}
	seq, err := strconv.ParseUint(reply[1], 10, 64)
	if err != nil {
		return Reminder{}, fmt.Errorf("zlink: redis put reminder: seq %.24q", reply[1])
	}
	old := ""
	if reply[2] != "" {
		if os, err := strconv.ParseUint(reply[2], 10, 64); err == nil {
			old = reminderMember(os, spot.ID, rem.Name)
		}
	}
	out := Reminder{Name: rem.Name, Due: time.UnixMilli(due), Period: rem.Period.Truncate(time.Millisecond),
		Payload: append([]byte(nil), rem.Payload...), Seq: seq}
	ierr := remIndexScript.Exec(ctx, r.client, []string{r.remIndexKey(spot.Mesh, spot.Kind, ReminderPart(spot.ID))},
		[]string{old, reminderMember(seq, spot.ID, rem.Name), strconv.FormatInt(due, 10)}).Error()
	if confirm != nil {
		return out, r.unconfirmed(fmt.Sprintf("put reminder %s of %s/%s", rem.Name, spot.Kind, spot.ID), confirm)
	}
	if ierr != nil {
		// The record is there, its index entry is not: it would never fire.
		return out, r.wrap("index reminder (registered, not indexed: put it again)", ierr)
	}
	return out, nil
}

// deleteReminder is SpotReminders.DeleteReminder behind validated.
func (r *Redis) deleteReminder(ctx context.Context, spot Ownership, name string) (bool, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	rec, hash, _ := r.remKeys(spot.Mesh, spot.Kind, spot.ID)
	res, confirm := r.spotExec(ctx, remDeleteScript, []string{rec, hash}, append(remFenceArgs(spot), name))
	reply, err := res.AsStrSlice()
	if err != nil {
		return false, r.wrap("delete reminder", err)
	}
	if err := r.remRefusal(spot, reply); err != nil {
		return false, err
	}
	switch {
	case len(reply) == 1 && reply[0] == "none":
		return false, nil
	case len(reply) != 2 || reply[0] != "done":
		return false, fmt.Errorf("zlink: redis delete reminder: reply %.64q", reply)
	}
	if seq, err := strconv.ParseUint(reply[1], 10, 64); err == nil {
		// An entry left behind is removed by its firing (record gone).
		_ = r.client.Do(ctx, r.client.B().Zrem().Key(r.remIndexKey(spot.Mesh, spot.Kind, ReminderPart(spot.ID))).
			Member(reminderMember(seq, spot.ID, name)).Build()).Error()
	}
	if confirm != nil {
		return true, r.unconfirmed(fmt.Sprintf("delete reminder %s of %s/%s", name, spot.Kind, spot.ID), confirm)
	}
	return true, nil
}

// listReminders is SpotReminders.ListReminders behind validated.
func (r *Redis) listReminders(ctx context.Context, mesh, kind, id string) ([]Reminder, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	_, hash, _ := r.remKeys(mesh, kind, id)
	m, err := r.client.Do(ctx, r.client.B().Hgetall().Key(hash).Build()).AsStrMap()
	if err != nil {
		return nil, r.wrap("list reminders", err)
	}
	out := make([]Reminder, 0, len(m))
	for name, v := range m {
		rem, err := parseReminder(name, v)
		if err != nil {
			r.corrupt.report(r.cfg.Logger, hash, err)
			continue
		}
		out = append(out, rem)
	}
	slices.SortFunc(out, func(a, b Reminder) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// getReminder is SpotReminders.GetReminder behind validated.
func (r *Redis) getReminder(ctx context.Context, mesh, kind, id, name string) (Reminder, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	_, hash, _ := r.remKeys(mesh, kind, id)
	v, err := r.client.Do(ctx, r.client.B().Hget().Key(hash).Field(name).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return Reminder{}, fmt.Errorf("%w: reminder %s of spot %s/%s", ErrNotFound, name, kind, id)
	}
	if err != nil {
		return Reminder{}, r.wrap("get reminder", err)
	}
	rem, err := parseReminder(name, v)
	if err != nil {
		r.corrupt.report(r.cfg.Logger, hash, err)
		return Reminder{}, err
	}
	return rem, nil
}

// parseReminder decodes a stored reminder.
func parseReminder(name, v string) (Reminder, error) {
	f := strings.SplitN(v, " ", 4)
	if len(f) != 4 {
		return Reminder{}, corruptf("reminder %.64q: %d fields", name, len(f))
	}
	seq, e1 := strconv.ParseUint(f[0], 10, 64)
	due, e2 := strconv.ParseInt(f[1], 10, 64)
	period, e3 := strconv.ParseInt(f[2], 10, 64)
	if e1 != nil || e2 != nil || e3 != nil || due <= 0 || period < 0 || len(f[3]) > MaxReminderPayload {
		return Reminder{}, corruptf("reminder %.64q: %.64q", name, v)
	}
	return Reminder{Name: name, Seq: seq, Due: time.UnixMilli(due), Period: time.Duration(period) * time.Millisecond,
		Payload: []byte(f[3])}, nil
}

// advanceReminder is SpotReminders.AdvanceReminder behind validated.
func (r *Redis) advanceReminder(ctx context.Context, o Ownership, name string, seq uint64, due, next time.Time) error {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	rec, hash, _ := r.remKeys(o.Mesh, o.Kind, o.ID)
	nextMs := ""
	if !next.IsZero() {
		nextMs = strconv.FormatInt(next.UnixMilli(), 10)
	}
	res, confirm := r.spotExec(ctx, remAdvanceScript, []string{rec, hash},
		append(remFenceArgs(o), name, u64(seq), strconv.FormatInt(due.UnixMilli(), 10), nextMs))
	reply, err := res.AsStrSlice()
	if err != nil {
		return r.wrap("advance reminder", err)
	}
	if err := r.remRefusal(o, reply); err != nil {
		return err
	}
	switch {
	case len(reply) == 4 && reply[0] == "gone":
		return fmt.Errorf("%w: reminder %s of spot %s/%s (registration %d due %d)", ErrNotFound, name, o.Kind, o.ID, seq, due.UnixMilli())
	case len(reply) != 4 || reply[0] != "done":
		return fmt.Errorf("zlink: redis advance reminder: reply %.64q", reply)
	}
	key, member := r.remIndexKey(o.Mesh, o.Kind, ReminderPart(o.ID)), reminderMember(seq, o.ID, name)
	b := r.client.B()
	var ierr error
	if next.IsZero() {
		ierr = r.client.Do(ctx, b.Zrem().Key(key).Member(member).Build()).Error()
	} else {
		ierr = r.client.Do(ctx, b.Zadd().Key(key).Gt().ScoreMember().ScoreMember(float64(next.UnixMilli()), member).Build()).Error()
	}
	if confirm != nil {
		return r.unconfirmed(fmt.Sprintf("advance reminder %s of %s/%s", name, o.Kind, o.ID), confirm)
	}
	// An index write that failed leaves the entry at the old due time:
	// its next read finds the record due later and fixes it.
	_ = ierr
	return nil
}

// dueReminders is SpotReminders.DueReminders behind validated: one
// ZRANGEBYSCORE.
func (r *Redis) dueReminders(ctx context.Context, mesh, kind string, part, limit int, now time.Time) ([]DueReminder, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	key := r.remIndexKey(mesh, kind, part)
	zs, err := r.client.Do(ctx, r.client.B().Zrangebyscore().Key(key).Min("-inf").
		Max(strconv.FormatInt(now.UnixMilli(), 10)).Withscores().Limit(0, int64(limit)).Build()).AsZScores()
	if err != nil {
		return nil, r.wrap("read due reminders", err)
	}
	out := make([]DueReminder, 0, len(zs))
	for _, z := range zs {
		d, err := parseReminderMember(kind, z.Member)
		if err != nil {
			r.corrupt.report(r.cfg.Logger, key, corruptf("%w", err))
			continue
		}
		d.Due = time.UnixMilli(int64(z.Score))
		out = append(out, d)
	}
	return out, nil
}

// fixReminderIndex is SpotReminders.FixReminderIndex behind validated.
func (r *Redis) fixReminderIndex(ctx context.Context, mesh string, e DueReminder, due time.Time) error {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	key, member := r.remIndexKey(mesh, e.Kind, ReminderPart(e.ID)), reminderMember(e.Seq, e.ID, e.Name)
	b := r.client.B()
	var err error
	if due.IsZero() {
		err = r.client.Do(ctx, b.Zrem().Key(key).Member(member).Build()).Error()
	} else {
		err = r.client.Do(ctx, b.Zadd().Key(key).Xx().Gt().ScoreMember().ScoreMember(float64(due.UnixMilli()), member).Build()).Error()
	}
	if err != nil {
		return r.wrap("fix reminder index", err)
	}
	return nil
}
