package location

// The fanout publisher records of the Redis Location Store.

import (
	"context"
	"fmt"
	"time"
)

// PutPublisher implements Store.
func (r *Redis) PutPublisher(ctx context.Context, p Publisher, ttl time.Duration) error {
	if err := p.validate(); err != nil {
		return err
	}
	if err := validTTL(ttl); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	blob, err := encodePublisher(p)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	_, err = putScript.Exec(ctx, r.client,
		[]string{r.pubPrefix(p.Channel) + p.RID, r.pubsKey(p.Channel)},
		[]string{u64(p.Generation), "", blob, ttlMillis(ttl), p.RID, ""},
	).ToString()
	if err != nil {
		return r.wrap("put publisher", err)
	}
	return nil
}

// ListPublishers implements Store.
func (r *Redis) ListPublishers(ctx context.Context, channel string) ([]Publisher, error) {
	if err := validChannel(channel); err != nil {
		return nil, err
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return listRecords(ctx, r, "list publishers", r.pubsKey(channel), r.pubPrefix(channel),
		func(rid, gen, _, blob string) (Publisher, error) { return publisherAt(channel, rid, gen, blob) },
		func(p Publisher) string { return p.RID })
}

// DeletePublisher implements Store.
func (r *Redis) DeletePublisher(ctx context.Context, channel, rid string, gen uint64) error {
	if err := validChannel(channel); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	n, err := deleteScript.Exec(ctx, r.client,
		[]string{r.pubPrefix(channel) + rid, r.pubsKey(channel)},
		[]string{u64(gen), rid, ""},
	).AsInt64()
	if err != nil {
		return r.wrap("delete publisher", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: publisher %s/%s generation %d", ErrNotFound, channel, rid, gen)
	}
	return nil
}
