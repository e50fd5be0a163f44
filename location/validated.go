package location

import (
	"context"
	"fmt"
	"time"
)

// The validating wrapper: every Store method of Memory and Redis is
// validated's, which does the common opening once — the arguments (names,
// sizes, TTLs, owners, epochs: ErrInvalid), then ctx (its error as is),
// then Close (ErrClosed) — and only then calls the implementation's
// method of the same name in lower case. The implementations (backend)
// trust their arguments: a call that fails here reaches none of them.
// Memory and Redis embed validated over themselves (NewMemory, NewRedis).

// backend is a Store implementation behind validated: the Store's methods
// with valid arguments, an open store and a live ctx. closedNow reports
// Close (a call racing Close may still reach the backend, which then
// fails or does harmless work; Watch checks again under its lock).
type backend interface {
	closedNow() bool

	putDescriptor(ctx context.Context, d Descriptor, ttl time.Duration) error
	renewDescriptor(ctx context.Context, mesh, rid string, gen uint64, ttl time.Duration) error
	deleteDescriptor(ctx context.Context, mesh, rid string, gen uint64) error
	listDescriptors(ctx context.Context, mesh string) ([]Descriptor, error)
	getDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error)
	watch(ctx context.Context, mesh string) (<-chan Event, error)
	descriptorRevision(ctx context.Context, mesh string) (MeshRevision, error)
	descriptorChanges(ctx context.Context, mesh string, since MeshRevision) (DescriptorChanges, error)
	expireDescriptors(ctx context.Context, mesh string) (removed, live int, err error)

	putPublisher(ctx context.Context, p Publisher, ttl time.Duration) error
	listPublishers(ctx context.Context, channel string) ([]Publisher, error)
	deletePublisher(ctx context.Context, channel, rid string, gen uint64) error

	createSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error
	renewSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error
	deleteSpotLease(ctx context.Context, l SpotLease) error
	checkSpotLease(ctx context.Context, l SpotLease, tombTTL time.Duration) (bool, error)
	spotLeaseLive(ctx context.Context, l SpotLease) (bool, error)
	spotRecord(ctx context.Context, mesh, kind, id string) (Ownership, error)
	claimSpot(ctx context.Context, expect, next Ownership) (Ownership, error)
	claimSpotIn(ctx context.Context, expect, next Ownership) (Ownership, string, error)
	spotIncarnation(ctx context.Context, mesh, kind, id string) (string, error)
	releaseSpot(ctx context.Context, o Ownership) error
	transferSpot(ctx context.Context, from Ownership, toRID string, toGen uint64) (Ownership, error)

	putSpotState(ctx context.Context, o Ownership, st SpotState) error
	getSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error)
	spotStateEpoch(ctx context.Context, mesh, kind, id string) (uint64, error)
	spotRecordAndStateEpoch(ctx context.Context, mesh, kind, id string) (Ownership, uint64, error)
	claimSpotWithState(ctx context.Context, expect, next Ownership) (ClaimedSpot, error)

	putReminder(ctx context.Context, spot Ownership, r Reminder) (Reminder, error)
	deleteReminder(ctx context.Context, spot Ownership, name string) (bool, error)
	listReminders(ctx context.Context, mesh, kind, id string) ([]Reminder, error)
	getReminder(ctx context.Context, mesh, kind, id, name string) (Reminder, error)
	advanceReminder(ctx context.Context, o Ownership, name string, seq uint64, due, next time.Time) error
	dueReminders(ctx context.Context, mesh, kind string, part, limit int, now time.Time) ([]DueReminder, error)
	fixReminderIndex(ctx context.Context, mesh string, e DueReminder, due time.Time) error
}

// validated is the validating wrapper over a backend.
type validated struct{ b backend }

// open is the common end of every opening: the first of the arguments'
// errors, then ctx's, then ErrClosed.
func (v *validated) open(ctx context.Context, errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if v.b.closedNow() {
		return ErrClosed
	}
	return nil
}

func spotName(mesh, kind, id string) error {
	return Ownership{Mesh: mesh, Kind: kind, ID: id}.validateSpot()
}

// PutDescriptor implements Descriptors.
func (v *validated) PutDescriptor(ctx context.Context, d Descriptor, ttl time.Duration) error {
	if err := v.open(ctx, d.validate(), validTTL(ttl)); err != nil {
		return err
	}
	return v.b.putDescriptor(ctx, d, ttl)
}

// RenewDescriptor implements Descriptors.
func (v *validated) RenewDescriptor(ctx context.Context, mesh, rid string, gen uint64, ttl time.Duration) error {
	if err := v.open(ctx, validMesh(mesh), validTTL(ttl)); err != nil {
		return err
	}
	return v.b.renewDescriptor(ctx, mesh, rid, gen, ttl)
}

// DeleteDescriptor implements Descriptors.
func (v *validated) DeleteDescriptor(ctx context.Context, mesh, rid string, gen uint64) error {
	if err := v.open(ctx, validMesh(mesh)); err != nil {
		return err
	}
	return v.b.deleteDescriptor(ctx, mesh, rid, gen)
}

// ListDescriptors implements Descriptors.
func (v *validated) ListDescriptors(ctx context.Context, mesh string) ([]Descriptor, error) {
	if err := v.open(ctx, validMesh(mesh)); err != nil {
		return nil, err
	}
	return v.b.listDescriptors(ctx, mesh)
}

// GetDescriptor implements Descriptors. A RID no descriptor can have is
// ErrNotFound.
func (v *validated) GetDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error) {
	if err := v.open(ctx, validMesh(mesh)); err != nil {
		return Descriptor{}, err
	}
	if rid == "" || len(rid) > maxNameLen {
		return Descriptor{}, fmt.Errorf("%w: descriptor %s/%.64s", ErrNotFound, mesh, rid)
	}
	return v.b.getDescriptor(ctx, mesh, rid)
}

// Watch implements Descriptors.
func (v *validated) Watch(ctx context.Context, mesh string) (<-chan Event, error) {
	if err := v.open(ctx, validMesh(mesh)); err != nil {
		return nil, err
	}
	return v.b.watch(ctx, mesh)
}

// DescriptorRevision implements Descriptors.
func (v *validated) DescriptorRevision(ctx context.Context, mesh string) (MeshRevision, error) {
	if err := v.open(ctx, validMesh(mesh)); err != nil {
		return MeshRevision{}, err
	}
	return v.b.descriptorRevision(ctx, mesh)
}

// DescriptorChanges implements Descriptors.
func (v *validated) DescriptorChanges(ctx context.Context, mesh string, since MeshRevision) (DescriptorChanges, error) {
	if err := v.open(ctx, validMesh(mesh)); err != nil {
		return DescriptorChanges{}, err
	}
	return v.b.descriptorChanges(ctx, mesh, since)
}

// ExpireDescriptors implements Descriptors.
func (v *validated) ExpireDescriptors(ctx context.Context, mesh string) (removed, live int, err error) {
	if err := v.open(ctx, validMesh(mesh)); err != nil {
		return 0, 0, err
	}
	return v.b.expireDescriptors(ctx, mesh)
}

// PutPublisher implements Publishers.
func (v *validated) PutPublisher(ctx context.Context, p Publisher, ttl time.Duration) error {
	if err := v.open(ctx, p.validate(), validTTL(ttl)); err != nil {
		return err
	}
	return v.b.putPublisher(ctx, p, ttl)
}

// ListPublishers implements Publishers.
func (v *validated) ListPublishers(ctx context.Context, channel string) ([]Publisher, error) {
	if err := v.open(ctx, validChannel(channel)); err != nil {
		return nil, err
	}
	return v.b.listPublishers(ctx, channel)
}

// DeletePublisher implements Publishers.
func (v *validated) DeletePublisher(ctx context.Context, channel, rid string, gen uint64) error {
	if err := v.open(ctx, validChannel(channel)); err != nil {
		return err
	}
	return v.b.deletePublisher(ctx, channel, rid, gen)
}

// CreateSpotLease implements SpotDirectory.
func (v *validated) CreateSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error {
	if err := v.open(ctx, l.validate(), validTTL(ttl)); err != nil {
		return err
	}
	return v.b.createSpotLease(ctx, l, ttl)
}

// RenewSpotLease implements SpotDirectory.
func (v *validated) RenewSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error {
	if err := v.open(ctx, l.validate(), validTTL(ttl)); err != nil {
		return err
	}
	return v.b.renewSpotLease(ctx, l, ttl)
}

// DeleteSpotLease implements SpotDirectory.
func (v *validated) DeleteSpotLease(ctx context.Context, l SpotLease) error {
	if err := v.open(ctx, l.validate()); err != nil {
		return err
	}
	return v.b.deleteSpotLease(ctx, l)
}

// CheckSpotLease implements SpotDirectory.
func (v *validated) CheckSpotLease(ctx context.Context, l SpotLease, tombTTL time.Duration) (bool, error) {
	if err := v.open(ctx, l.validate(), validTTL(tombTTL)); err != nil {
		return false, err
	}
	return v.b.checkSpotLease(ctx, l, tombTTL)
}

// SpotLeaseLive implements SpotDirectory.
func (v *validated) SpotLeaseLive(ctx context.Context, l SpotLease) (bool, error) {
	if err := v.open(ctx, l.validate()); err != nil {
		return false, err
	}
	return v.b.spotLeaseLive(ctx, l)
}

// SpotRecord implements SpotDirectory.
func (v *validated) SpotRecord(ctx context.Context, mesh, kind, id string) (Ownership, error) {
	if err := v.open(ctx, spotName(mesh, kind, id)); err != nil {
		return Ownership{}, err
	}
	return v.b.spotRecord(ctx, mesh, kind, id)
}

// ClaimSpot implements SpotDirectory.
func (v *validated) ClaimSpot(ctx context.Context, expect, next Ownership) (Ownership, error) {
	if err := v.open(ctx, validClaim(expect, next)); err != nil {
		return Ownership{}, err
	}
	return v.b.claimSpot(ctx, expect, next)
}

// ClaimSpotIn implements SpotDirectory.
func (v *validated) ClaimSpotIn(ctx context.Context, expect, next Ownership) (Ownership, string, error) {
	if err := v.open(ctx, validClaim(expect, next)); err != nil {
		return Ownership{}, "", err
	}
	return v.b.claimSpotIn(ctx, expect, next)
}

// SpotIncarnation implements SpotDirectory.
func (v *validated) SpotIncarnation(ctx context.Context, mesh, kind, id string) (string, error) {
	if err := v.open(ctx, spotName(mesh, kind, id)); err != nil {
		return "", err
	}
	return v.b.spotIncarnation(ctx, mesh, kind, id)
}

// ReleaseSpot implements SpotDirectory.
func (v *validated) ReleaseSpot(ctx context.Context, o Ownership) error {
	if err := v.open(ctx, o.validateOwner()); err != nil {
		return err
	}
	return v.b.releaseSpot(ctx, o)
}

// TransferSpot implements SpotDirectory.
func (v *validated) TransferSpot(ctx context.Context, from Ownership, toRID string, toGen uint64) (Ownership, error) {
	if err := v.open(ctx, validTransfer(from, toRID, toGen)); err != nil {
		return Ownership{}, err
	}
	return v.b.transferSpot(ctx, from, toRID, toGen)
}

// PutSpotState implements SpotStates.
func (v *validated) PutSpotState(ctx context.Context, o Ownership, st SpotState) error {
	if err := v.open(ctx, validState(o, st)); err != nil {
		return err
	}
	return v.b.putSpotState(ctx, o, st)
}

// GetSpotState implements SpotStates.
func (v *validated) GetSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error) {
	if err := v.open(ctx, spotName(mesh, kind, id)); err != nil {
		return SpotState{}, err
	}
	return v.b.getSpotState(ctx, mesh, kind, id)
}

// SpotStateEpoch implements SpotStates.
func (v *validated) SpotStateEpoch(ctx context.Context, mesh, kind, id string) (uint64, error) {
	if err := v.open(ctx, spotName(mesh, kind, id)); err != nil {
		return 0, err
	}
	return v.b.spotStateEpoch(ctx, mesh, kind, id)
}

// SpotRecordAndStateEpoch implements SpotClaimReader.
func (v *validated) SpotRecordAndStateEpoch(ctx context.Context, mesh, kind, id string) (Ownership, uint64, error) {
	if err := v.open(ctx, spotName(mesh, kind, id)); err != nil {
		return Ownership{}, 0, err
	}
	return v.b.spotRecordAndStateEpoch(ctx, mesh, kind, id)
}

// ClaimSpotWithState implements SpotStateClaimer.
func (v *validated) ClaimSpotWithState(ctx context.Context, expect, next Ownership) (ClaimedSpot, error) {
	if err := v.open(ctx, validClaim(expect, next)); err != nil {
		return ClaimedSpot{}, err
	}
	return v.b.claimSpotWithState(ctx, expect, next)
}

// PutReminder implements SpotReminders.
func (v *validated) PutReminder(ctx context.Context, spot Ownership, r Reminder) (Reminder, error) {
	if err := v.open(ctx, validReminder(spot, r)); err != nil {
		return Reminder{}, err
	}
	return v.b.putReminder(ctx, spot, r)
}

// DeleteReminder implements SpotReminders.
func (v *validated) DeleteReminder(ctx context.Context, spot Ownership, name string) (bool, error) {
	if err := v.open(ctx, validReminderSpot(spot), validReminderName(name)); err != nil {
		return false, err
	}
	return v.b.deleteReminder(ctx, spot, name)
}

// ListReminders implements SpotReminders.
func (v *validated) ListReminders(ctx context.Context, mesh, kind, id string) ([]Reminder, error) {
	if err := v.open(ctx, spotName(mesh, kind, id)); err != nil {
		return nil, err
	}
	return v.b.listReminders(ctx, mesh, kind, id)
}

// GetReminder implements SpotReminders.
func (v *validated) GetReminder(ctx context.Context, mesh, kind, id, name string) (Reminder, error) {
	if err := v.open(ctx, spotName(mesh, kind, id), validReminderName(name)); err != nil {
		return Reminder{}, err
	}
	return v.b.getReminder(ctx, mesh, kind, id, name)
}

// AdvanceReminder implements SpotReminders.
func (v *validated) AdvanceReminder(ctx context.Context, o Ownership, name string, seq uint64, due, next time.Time) error {
	if err := v.open(ctx, o.validateOwner(), validReminderName(name)); err != nil {
		return err
	}
	return v.b.advanceReminder(ctx, o, name, seq, due, next)
}

// DueReminders implements SpotReminders.
func (v *validated) DueReminders(ctx context.Context, mesh, kind string, part, limit int, now time.Time) ([]DueReminder, error) {
	if err := v.open(ctx, validDueRead(mesh, kind, part, limit)); err != nil {
		return nil, err
	}
	return v.b.dueReminders(ctx, mesh, kind, part, limit, now)
}

// FixReminderIndex implements SpotReminders.
func (v *validated) FixReminderIndex(ctx context.Context, mesh string, e DueReminder, due time.Time) error {
	if err := v.open(ctx, spotName(mesh, e.Kind, e.ID)); err != nil {
		return err
	}
	return v.b.fixReminderIndex(ctx, mesh, e, due)
}
