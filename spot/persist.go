package spot

import (
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
)

// Persistence makes a kind's state durable: a Spot's state is saved as a
// msgpack snapshot of its state type, versioned, with a write that
// succeeds only while the store's ownership record still names the
// activation (owner, lease generation, epoch). It is restored on every
// activation — after an idle deactivation, a restart after a panic, a
// crash of the owner, a move.
type Persistence struct {
	// Version is the snapshot format version of this build (at least 1).
	// A snapshot of a newer version is refused (the activation fails with
	// ErrHandler saying so); an older one goes through the kind's
	// OnUpgrade, or is refused without one.
	Version uint32
	// Every saves after this many messages since the last save (0: not by
	// count).
	Every int
	// Interval saves a changed state this often (0: not by time). With
	// neither, the state is saved only at deactivation and on a move.
	Interval time.Duration
	// ReplyAfterWrite saves after every message and only then replies.
	// A save refused because the activation lost its ownership ends the
	// call with ErrFenced; any other failed save (a store timeout, a reset
	// connection: the write may or may not have landed) ends it with
	// ErrOutcomeUnknown, and the activation re-reads its state from the
	// store before its next turn, so it goes on from what the store holds.
	// By default replies go out before the save, so acknowledged work
	// since the last save can be lost in a crash.
	ReplyAfterWrite bool
}

// Persist makes the kind durable (see Persistence). The state type must
// encode with msgpack (exported fields, or msgpack tags).
func (k *Kind[S]) Persist(p Persistence) *Kind[S] {
	if p.Version == 0 || p.Every < 0 || p.Interval < 0 {
		k.refuse("kind %s: persistence %+v: version 0 or a negative setting", k.reg.name, p)
		return k
	}
	k.reg.persist = &p
	k.reg.assign = func(dst, src any) { *dst.(*S) = *src.(*S) }
	k.reg.encode = func(state any) ([]byte, error) { return msgpack.Marshal(state.(*S)) }
	k.reg.decode = func(version uint32, data []byte) (any, error) {
		if version != p.Version {
			if k.reg.upgrade == nil {
				return nil, fmt.Errorf("snapshot version %d, this build reads version %d and has no OnUpgrade", version, p.Version)
			}
			return k.reg.upgrade(version, data)
		}
		s := new(S)
		if err := msgpack.Unmarshal(data, s); err != nil {
			return nil, fmt.Errorf("snapshot version %d does not decode: %w", version, err)
		}
		return s, nil
	}
	return k
}

// OnUpgrade reads a snapshot of an older format version (a newer one is
// always refused).
func (k *Kind[S]) OnUpgrade(f func(version uint32, data []byte) (*S, error)) *Kind[S] {
	if f == nil {
		k.refuse("kind %s: nil OnUpgrade", k.reg.name)
		return k
	}
	k.reg.upgrade = func(version uint32, data []byte) (any, error) {
		if k.reg.persist != nil && version > k.reg.persist.Version {
			return nil, fmt.Errorf("snapshot version %d is newer than this build's %d", version, k.reg.persist.Version)
		}
		return f(version, data)
	}
	return k
}

// errSaveFailed marks a save the store did not confirm (neither written
// for sure nor refused): callers say what that means for them.
var errSaveFailed = errors.New("zlink: spot state not saved")

// restore reads the Spot's persisted state (a fresh one when none).
func (a *spotActor) restore() (any, error) {
	rt, reg := a.rt, a.ks.reg
	ctx, cancel := rt.storeCtx()
	defer cancel()
	st, err := rt.states.GetSpotState(ctx, rt.n.Mesh(), reg.name, a.act.id)
	switch {
	case errors.Is(err, location.ErrNotFound):
		return reg.newState(a.act.id), nil
	case err != nil:
		return nil, fmt.Errorf("reading the snapshot: %w", err)
	}
	return reg.decode(st.Version, st.Data)
}

// restoreFirst is restore for a start: the first start of an activation
// whose claim read the state takes that (it is what a read now would
// return: only this activation writes it), a restart reads again.
func (a *spotActor) restoreFirst() (any, error) {
	pre := a.act.pre
	if pre == nil {
		return a.restore()
	}
	a.act.pre = nil
	reg := a.ks.reg
	switch {
	case pre.StateErr != nil:
		return nil, fmt.Errorf("reading the snapshot: %w", pre.StateErr)
	case !pre.Found:
		return reg.newState(a.act.id), nil
	}
	return reg.decode(pre.State.Version, pre.State.Data)
}

// save writes the state if it changed (R2: only while the activation is
// valid). A write the store refuses because the record moved on fences
// this activation: it is stale.
func (a *spotActor) save() error {
	rt, reg := a.rt, a.ks.reg
	if reg.persist == nil || !(a.dirty || a.act.dirty.Load()) {
		return nil
	}
	if !rt.valid(a.act, time.Now()) {
		return fmt.Errorf("%w: %s/%s: lease not valid", ErrFenced, reg.name, a.act.id)
	}
	data, err := reg.encode(a.state)
	if err != nil {
		return fmt.Errorf("%w: %s/%s: encoding the snapshot: %w", zerr.ErrHandler, reg.name, a.act.id, err)
	}
	o := location.Ownership{Mesh: rt.n.Mesh(), Kind: reg.name, ID: a.act.id, OwnerRID: rt.n.RID(), OwnerGeneration: a.act.gen, Epoch: a.act.epoch}
	ctx, cancel := rt.storeCtx()
	err = rt.states.PutSpotState(ctx, o, location.SpotState{Data: data, Version: reg.persist.Version, Epoch: a.act.epoch})
	cancel()
	switch {
	case err == nil:
		a.dirty, a.since = false, 0
		a.act.saved.Store(time.Now().UnixNano())
		a.act.dirty.Store(false)
		rt.stats.saves.Add(1)
		return nil
	case errors.Is(err, location.ErrFenced):
		rt.stats.overlaps.Add(1)
		rt.log.Error().Str("kind", reg.name).Str("id", a.act.id).Uint64("epoch", a.act.epoch).
			Msg("spots: a state write was refused: the record moved on under this activation; fencing it")
		a.act.fenced.Store(true)
		if ref := a.ks.ref.Load(); ref != nil {
			_ = ref.TellControl(&staleSpot{act: a.act})
		}
		return fmt.Errorf("%w: %s/%s: %w", ErrFenced, reg.name, a.act.id, err)
	default:
		rt.stats.saveErrors.Add(1)
		rt.log.Warn().Err(err).Str("kind", reg.name).Str("id", a.act.id).Msg("spots: state not saved; retried with the next change")
		return fmt.Errorf("%w: %s/%s: %v", errSaveFailed, reg.name, a.act.id, err)
	}
}

// changed records that a turn ran, and saves when the kind's count says
// so (ReplyAfterWrite saves in the turn itself).
func (a *spotActor) changed() {
	p := a.ks.reg.persist
	if p == nil {
		return
	}
	a.dirty = true
	a.act.dirty.Store(true)
	a.since++
	if p.Every > 0 && a.since >= p.Every {
		_ = a.save()
	}
}

// checkpoint is the kind actor's nudge for an interval save.
type checkpoint struct{}

// staleSpot: a save found the record moved on; the kind actor closes the
// activation without a release.
type staleSpot struct{ act *activation }

// afterWrite is a ReplyAfterWrite turn's save: a failed write the store did
// not refuse leaves the outcome unknown, and the activation re-reads its
// state before its next turn.
func (a *spotActor) afterWrite() error {
	a.dirty = true
	a.act.dirty.Store(true)
	err := a.save()
	if errors.Is(err, errSaveFailed) {
		a.reread = true
		return fmt.Errorf("%w: the turn ran; its save failed and may or may not have reached the store (%v)", ErrOutcomeUnknown, err)
	}
	return err
}

// reload re-reads the state after a save whose outcome is unknown, into
// the state the handlers hold (a reentrant kind's waiting turn keeps its
// pointer). A failed read leaves it for the next turn.
func (a *spotActor) reload() error {
	s, err := a.restore()
	if err != nil {
		return err
	}
	a.ks.reg.assign(a.state, s)
	a.dirty, a.since, a.reread = false, 0, false
	a.act.dirty.Store(false)
	a.rt.stats.rereads.Add(1)
	return nil
}
