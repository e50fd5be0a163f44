package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/zlink-go/zlink/spot"
)

// ReminderInfo is one durable reminder of a Spot (spot.Reminder): its
// next due time, its period (0: it fires once) and its payload as text.
type ReminderInfo struct {
	Name     string    `json:"name"`
	Due      time.Time `json:"due"`
	PeriodMs int64     `json:"period_ms"`
	Payload  string    `json:"payload,omitempty"`
}

// RemindersResponse answers GET /spots/reminders: the Spot's reminders,
// by name.
type RemindersResponse struct {
	Mesh      string         `json:"mesh"`
	Kind      string         `json:"kind"`
	ID        string         `json:"id"`
	Reminders []ReminderInfo `json:"reminders"`
}

// ReminderRequest is the body of POST /spots/reminders: register (or
// replace) reminder Name, first due at Due or In from now (neither: one
// Period from now), repeating every Period (a Go duration, "" or "0": once).
type ReminderRequest struct {
	Name    string     `json:"name"`
	Period  string     `json:"period,omitempty"`
	In      string     `json:"in,omitempty"`
	Due     *time.Time `json:"due,omitempty"`
	Payload string     `json:"payload,omitempty"`
}

// ReminderCancelResponse answers POST /spots/reminders/cancel.
type ReminderCancelResponse struct {
	Mesh      string `json:"mesh"`
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Cancelled bool   `json:"cancelled"` // false: the Spot had no such reminder
}

// adminDuration reads a non-negative Go duration ("": 0).
func adminDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%.32q: want a duration such as 1m", s)
	}
	return d, nil
}

// spotQuery reads ?kind=K&id=ID of a reminder endpoint.
func spotQuery(w http.ResponseWriter, r *http.Request, what string) (kind, id string, ok bool) {
	q := r.URL.Query()
	kind, id = q.Get("kind"), q.Get("id")
	if kind == "" || id == "" {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", what+": ?kind=K&id=ID are required")
		return "", "", false
	}
	return kind, id, true
}

// getSpotReminders serves GET /spots/reminders?kind=K&id=ID[&mesh=NAME]:
// spot.Reminders, one read of the Spot's reminder records; it activates
// nothing.
func (a *API) getSpotReminders(w http.ResponseWriter, r *http.Request) {
	kind, id, ok := spotQuery(w, r, "spots/reminders")
	if !ok {
		return
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "spots/reminders", adminTimeout)
	if !ok {
		return
	}
	defer cancel()
	list, err := spot.Reminders(ctx, n, kind, id)
	if err != nil {
		spotAdminErr(w, n, err)
		return
	}
	out := RemindersResponse{Mesh: n.Mesh(), Kind: kind, ID: id, Reminders: make([]ReminderInfo, 0, len(list))}
	for _, rm := range list {
		out.Reminders = append(out.Reminders, ReminderInfo{Name: rm.Name, Due: rm.Due.UTC(), PeriodMs: rm.Period.Milliseconds(), Payload: string(rm.Payload)})
	}
	writeJSON(w, http.StatusOK, out)
}

// postSpotReminder serves POST /spots/reminders?kind=K&id=ID[&mesh=NAME]
// with a ReminderRequest: spot.RegisterReminder from outside the Spot's
// turns (not fenced; the Spot is not activated). It answers the reminder
// as registered.
func (a *API) postSpotReminder(w http.ResponseWriter, r *http.Request) {
	kind, id, ok := spotQuery(w, r, "spots/reminders")
	if !ok {
		return
	}
	var req ReminderRequest
	if !readJSON(w, r, "spots/reminders", &req, false) {
		return
	}
	rm := spot.Reminder{Name: req.Name, Payload: []byte(req.Payload)}
	period, err := adminDuration(req.Period)
	if err != nil {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "spots/reminders: period "+err.Error())
		return
	}
	rm.Period = period
	switch in, err := adminDuration(req.In); {
	case err != nil:
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "spots/reminders: in "+err.Error())
		return
	case req.Due != nil && req.In != "":
		spotAdminFail(w, http.StatusBadRequest, "bad_request", `spots/reminders: give "due" or "in", not both`)
		return
	case req.Due != nil:
		rm.Due = *req.Due
	case req.In != "":
		rm.Due = time.Now().Add(in)
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "spots/reminders", adminTimeout)
	if !ok {
		return
	}
	defer cancel()
	if err := spot.RegisterReminder(ctx, n, kind, id, rm); err != nil {
		spotAdminErr(w, n, err)
		return
	}
	a.log.Info().Str("mesh", n.Mesh()).Str("kind", kind).Str("id", id).Str("reminder", rm.Name).Msg("admin: reminder registered")
	list, err := spot.Reminders(ctx, n, kind, id)
	if err != nil {
		spotAdminErr(w, n, err)
		return
	}
	for _, got := range list {
		if got.Name == rm.Name {
			writeJSON(w, http.StatusOK, ReminderInfo{Name: got.Name, Due: got.Due.UTC(), PeriodMs: got.Period.Milliseconds(), Payload: string(got.Payload)})
			return
		}
	}
	// Fired (a one-shot already due) or cancelled meanwhile.
	writeJSON(w, http.StatusOK, ReminderInfo{Name: rm.Name, Due: rm.Due.UTC(), PeriodMs: rm.Period.Milliseconds(), Payload: req.Payload})
}

// postSpotReminderCancel serves POST
// /spots/reminders/cancel?kind=K&id=ID&name=N[&mesh=NAME]:
// spot.CancelReminder from outside the Spot's turns.
func (a *API) postSpotReminderCancel(w http.ResponseWriter, r *http.Request) {
	kind, id, ok := spotQuery(w, r, "spots/reminders/cancel")
	if !ok {
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "spots/reminders/cancel: ?name=N is required")
		return
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "spots/reminders/cancel", adminTimeout)
	if !ok {
		return
	}
	defer cancel()
	done, err := spot.CancelReminder(ctx, n, kind, id, name)
	if err != nil {
		spotAdminErr(w, n, err)
		return
	}
	a.log.Info().Str("mesh", n.Mesh()).Str("kind", kind).Str("id", id).Str("reminder", name).Bool("cancelled", done).Msg("admin: reminder cancelled")
	writeJSON(w, http.StatusOK, ReminderCancelResponse{Mesh: n.Mesh(), Kind: kind, ID: id, Name: name, Cancelled: done})
}
