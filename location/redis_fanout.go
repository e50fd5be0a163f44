package location

// The fanout publisher records of the Redis Location Store.

import (
	"context"
	"fmt"
	"time"
)

// putPublisher is Store.PutPublisher behind validated.
func (r *Redis) putPublisher(ctx context.Context, p Publisher, ttl time.Duration) error {
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

// listPublishers is Store.ListPublishers behind validated.
func (r *Redis) listPublishers(ctx context.Context, channel string) ([]Publisher, error) {
	return listRecords(ctx, r, "list publishers", r.pubsKey(channel), r.pubPrefix(channel),
		func(rid, gen, _, blob string) (Publisher, error) { return publisherAt(channel, rid, gen, blob) },
		func(p Publisher) string { return p.RID })
}

// deletePublisher is Store.DeletePublisher behind validated.
func (r *Redis) deletePublisher(ctx context.Context, channel, rid string, gen uint64) error {
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
