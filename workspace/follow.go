package workspace

import "context"

// Follow calls handle with each event from events (a channel from
// Subscribe) until ctx ends or the channel is closed. Events that are
// already waiting when one arrives are handed over together, in order, so
// that a burst (every agent reporting at startup, a delete's steps) costs
// a subscriber one round of work instead of one per event.
func Follow(ctx context.Context, events <-chan Event, handle func(batch []Event)) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			batch := []Event{e}
		drain:
			for {
				select {
				case e, ok := <-events:
					if !ok {
						handle(batch)
						return
					}
					batch = append(batch, e)
				default:
					break drain
				}
			}
			handle(batch)
		}
	}
}
