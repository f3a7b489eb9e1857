package store

// WriteBatches hands what stream emits to write size values at a time
// (at least one), the last batch holding what remains once the stream
// ends, so that a sync holds at most one batch of a streamed listing in
// memory. write must not keep the slice: it is reused for the next batch.
// An error of write ends the stream and is returned; the stream's own
// error is returned without the rest being written. rows counts the
// values emitted and batches the writes that succeeded.
func WriteBatches[T any](size int, stream func(emit func(T) error) error, write func([]T) error) (rows int64, batches int, err error) {
	size = max(size, 1)
	buf := make([]T, 0, size)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if err := write(buf); err != nil {
			return err
		}
		batches++
		buf = buf[:0]
		return nil
	}
	err = stream(func(v T) error {
		buf = append(buf, v)
		rows++
		if len(buf) == size {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return rows, batches, err
}
