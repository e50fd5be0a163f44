package fence

// Holder is one node lifecycle: its RID and generation.
type Holder struct {
	RID string
	Gen uint64
}

// Record is a Spot's ownership record. A zero Holder means unowned (a
// released record keeps its epoch).
type Record struct {
	Holder Holder
	Epoch  uint64
}

// Owned reports whether the record names an owner.
func (r Record) Owned() bool { return r.Holder.RID != "" }

// Step is what a claim must do next.
type Step uint8

const (
	// Redirect: a live owner holds the Spot; send the call there.
	Redirect Step = 1 + iota
	// Mine: the record already names this lifecycle; activate if the lease
	// is valid.
	Mine
	// CheckOwner: another owner is recorded; ask its shard whether its
	// lease is live (tombstoning it when gone), then plan again.
	CheckOwner
	// CompareAndSet: write New if the record still equals Expect.
	CompareAndSet
)

// Plan is the claim's next step.
type Plan struct {
	Step   Step
	Expect Record // CompareAndSet: the record as read
	New    Record // CompareAndSet: the record to write
	Owner  Holder // Redirect, CheckOwner: the recorded owner
}

// OwnerState is what is known of the recorded owner's lease.
type OwnerState uint8

const (
	// Unknown: not asked yet.
	Unknown OwnerState = iota
	// Live: the owner's lease key exists.
	Live
	// Gone: the lease key is gone and the claimer tombstoned it.
	Gone
)

// PlanClaim decides the next step of a claim by self (R3), from the record
// read from the master, what is known of the recorded owner's lease, and
// the epoch of the Spot's persisted state (0 without persistence). The new
// epoch is max(recorded, persisted) + 1, so epochs never decrease (R4).
func PlanClaim(self Holder, rec Record, owner OwnerState, persisted uint64) Plan {
	switch {
	case rec.Owned() && rec.Holder == self:
		return Plan{Step: Mine, Owner: self}
	case rec.Owned() && owner == Unknown:
		return Plan{Step: CheckOwner, Owner: rec.Holder}
	case rec.Owned() && owner == Live:
		return Plan{Step: Redirect, Owner: rec.Holder}
	}
	return Plan{Step: CompareAndSet, Expect: rec, New: Record{Holder: self, Epoch: max(rec.Epoch, persisted) + 1}}
}

// Matches reports whether a release or transfer by from may change rec
// (R4: owner, generation and epoch all equal).
func Matches(rec, from Record) bool { return rec == from && rec.Owned() }
