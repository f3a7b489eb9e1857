package cloud

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// walk follows a pager's nextLinks and calls fn for each item, holding one
// page at a time. A failed page's error goes through fail; fn's error is
// returned as is, so callers can recognise their own.
func walk[P, T any](ctx context.Context, pager *runtime.Pager[P], items func(P) []*T, fn func(*T) error, fail func(error) error) error {
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fail(err)
		}
		for _, it := range items(page) {
			if it == nil {
				continue
			}
			if err := fn(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// deref reads an optional field of the SDK's models.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
