package revcache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store/storetest"
)

const table = "test_tenant_revisions"

// revisionDB is a database of the dialect holding an empty revision table.
func revisionDB(t *testing.T, dialect string) *bun.DB {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := db.ExecContext(context.Background(), `CREATE TABLE `+table+` (tenant_id TEXT PRIMARY KEY, revision BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// readRevision is Read that fails the test on an error.
func readRevision(t *testing.T, ctx context.Context, db *bun.DB, tenants []string) string {
	t.Helper()
	rev, err := revcache.Read(ctx, db, table, tenants)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestRevisionFollowsBumps: on both databases, the revision of a set of
// tenants changes with a bump of any of them, and only then; a bump in a
// transaction rolled back changes nothing.
func TestRevisionFollowsBumps(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := revisionDB(t, dialect)
			read := func(tenants ...string) string {
				t.Helper()
				return readRevision(t, ctx, db, tenants)
			}
			if got := read(); got != "" {
				t.Fatalf("no tenants: revision %q, want empty", got)
			}
			before := read("a", "b")
			if before != "0:0" {
				t.Fatalf("never bumped: %q, want 0:0", before)
			}
			if err := revcache.Bump(ctx, db, table, "a"); err != nil {
				t.Fatal(err)
			}
			afterA := read("a", "b")
			if afterA == before {
				t.Fatal("a's first bump left the revision of a and b as it was")
			}
			if got := read("b"); got != "0:0" {
				t.Fatalf("b alone after a's bump: %q, want 0:0", got)
			}
			if err := revcache.Bump(ctx, db, table, "b"); err != nil {
				t.Fatal(err)
			}
			if err := revcache.Bump(ctx, db, table, "a"); err != nil {
				t.Fatal(err)
			}
			if got := read("a", "b"); got == afterA || got != "2:3" {
				t.Fatalf("after three bumps: %q, want 2:3", got)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := revcache.Bump(ctx, tx, table, "a"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if got := read("a", "b"); got != "2:3" {
				t.Fatalf("after a rolled-back bump: %q, want 2:3", got)
			}
			// Under OneRead a repeat answers the first read's revision.
			once := revcache.OneRead(ctx)
			first, err := revcache.Read(once, db, table, []string{"b", "a"})
			if err != nil {
				t.Fatal(err)
			}
			if err := revcache.Bump(ctx, db, table, "a"); err != nil {
				t.Fatal(err)
			}
			if again, _ := revcache.Read(once, db, table, []string{"a", "b"}); again != first {
				t.Fatalf("a repeat under OneRead: %q, want the first read's %q", again, first)
			}
			if other, _ := revcache.Read(once, db, table, []string{"a"}); other != "1:3" {
				t.Fatalf("another set of tenants under OneRead: %q, want 1:3 read now", other)
			}
			if fresh := read("a", "b"); fresh == first {
				t.Fatalf("outside OneRead the bump was not read: %q", fresh)
			}
			if _, err := revcache.Read(ctx, db, "no_such_table", []string{"a"}); err == nil {
				t.Fatal("a missing table read without error")
			}
		})
	}
}

// TestRevisionOfManyTenants: past 32 tenants the revision is the whole
// table's: it still changes with a bump of any of them, and also with a
// bump of a tenant outside the set; under OneRead any two large sets
// share it.
func TestRevisionOfManyTenants(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := revisionDB(t, dialect)
			many := make([]string, 40)
			for i := range many {
				many[i] = fmt.Sprintf("t-%02d", i)
			}
			read := func(ctx context.Context, tenants []string) string {
				t.Helper()
				return readRevision(t, ctx, db, tenants)
			}
			before := read(ctx, many)
			for _, tenant := range []string{"t-39", "t-00", "outside"} {
				if err := revcache.Bump(ctx, db, table, tenant); err != nil {
					t.Fatal(err)
				}
				after := read(ctx, many)
				if after == before {
					t.Fatalf("a bump of %s left the revision of 40 tenants at %q", tenant, after)
				}
				before = after
			}
			if before != "*3:3" {
				t.Fatalf("after three first bumps: %q, want *3:3", before)
			}
			if small := read(ctx, many[:32]); small != "1:1" {
				t.Fatalf("32 tenants are read by name: %q, want 1:1 (t-00 alone bumped)", small)
			}
			once := revcache.OneRead(ctx)
			first := read(once, many)
			if err := revcache.Bump(ctx, db, table, "t-05"); err != nil {
				t.Fatal(err)
			}
			if again := read(once, many[1:]); again != first {
				t.Fatalf("another large set under OneRead: %q, want the first read's %q", again, first)
			}
			if now := read(ctx, many[1:]); now != "*4:4" {
				t.Fatalf("outside OneRead: %q, want *4:4", now)
			}
		})
	}
}

// TestGetKeepsByRevision: a value is loaded once per key and revision, a
// new revision loads again, and a failed load keeps nothing.
func TestGetKeepsByRevision(t *testing.T) {
	ctx := context.Background()
	c := revcache.New[int](8, time.Minute)
	loads := 0
	load := func(v int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { loads++; return v, nil }
	}
	for range 3 {
		if v, err := c.Get(ctx, "k", "1:1", load(10)); err != nil || v != 10 {
			t.Fatalf("got %d, %v; want 10", v, err)
		}
	}
	if loads != 1 {
		t.Fatalf("%d loads for one key and revision, want 1", loads)
	}
	if v, _ := c.Get(ctx, "k", "1:2", load(11)); v != 11 || loads != 2 {
		t.Fatalf("new revision: got %d after %d loads, want 11 after 2", v, loads)
	}
	if v, _ := c.Get(ctx, "other", "1:2", load(12)); v != 12 || loads != 3 {
		t.Fatalf("other key: got %d after %d loads, want 12 after 3", v, loads)
	}
	boom := errors.New("boom")
	if _, err := c.Get(ctx, "bad", "1:1", func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("failed load: err %v, want boom", err)
	}
	if v, _ := c.Get(ctx, "bad", "1:1", load(13)); v != 13 {
		t.Fatalf("after a failed load: got %d, want 13 from a new load", v)
	}
}

// TestGetSharesConcurrentLoads: callers missing one key and revision at
// once wait for one load.
func TestGetSharesConcurrentLoads(t *testing.T) {
	ctx := context.Background()
	c := revcache.New[int](8, time.Minute)
	var loads atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get(ctx, "k", "r", func(context.Context) (int, error) {
				loads.Add(1)
				<-release
				return 7, nil
			})
			if err != nil || v != 7 {
				t.Errorf("got %d, %v; want 7", v, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads for 8 concurrent callers, want 1", n)
	}
}

// TestGetOutlivesALeaderThatGaveUp: a caller whose shared load failed
// because the loading caller's context ended loads again itself.
func TestGetOutlivesALeaderThatGaveUp(t *testing.T) {
	c := revcache.New[int](8, time.Minute)
	leaderCtx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := c.Get(leaderCtx, "k", "r", func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			return 0, ctx.Err()
		})
		done <- err
	}()
	<-started
	follower := make(chan int)
	go func() {
		v, err := c.Get(context.Background(), "k", "r", func(context.Context) (int, error) { return 5, nil })
		if err != nil {
			t.Errorf("follower: %v", err)
		}
		follower <- v
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want canceled", err)
	}
	if v := <-follower; v != 5 {
		t.Fatalf("follower got %d, want 5 from its own load", v)
	}
}

// TestKey: tenant order and repeats do not matter; the parts do.
func TestKey(t *testing.T) {
	if revcache.Key([]string{"b", "a", "a"}, "30") != revcache.Key([]string{"a", "b"}, "30") {
		t.Fatal("the same tenants in another order gave another key")
	}
	if revcache.Key([]string{"a"}, "30") == revcache.Key([]string{"a"}, "31") {
		t.Fatal("other parts gave the same key")
	}
	if revcache.Key([]string{"a", "b"}) == revcache.Key([]string{"a"}, "b") {
		t.Fatal("a tenant and a part gave the same key")
	}
	if revcache.Key([]string{"a,b"}) == revcache.Key([]string{"a", "b"}) {
		t.Fatal("a tenant id with a comma gave the key of two tenants")
	}
	if revcache.Key(nil, "x\x00y") == revcache.Key(nil, "x", "y") {
		t.Fatal("a part with a NUL byte gave the key of two parts")
	}
}

// TestGetLoadsAgainPastMaxAge: a value older than the cache's maximum age
// is loaded again though its revision still holds.
func TestGetLoadsAgainPastMaxAge(t *testing.T) {
	ctx := context.Background()
	c := revcache.New[int](8, 50*time.Millisecond)
	loads := 0
	load := func(context.Context) (int, error) { loads++; return loads, nil }
	if v, _ := c.Get(ctx, "k", "r", load); v != 1 {
		t.Fatalf("first: %d", v)
	}
	// Read again and again, the value still ages from its load: a read
	// does not make it younger.
	start := time.Now()
	for time.Since(start) < 80*time.Millisecond {
		if v, _ := c.Get(ctx, "k", "r", load); v != 1 && time.Since(start) < 40*time.Millisecond {
			t.Fatalf("within the age: %d, want the kept 1", v)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v, _ := c.Get(ctx, "k", "r", load); v != 2 {
		t.Fatalf("past the age, read every 5 ms meanwhile: %d, want a new load", v)
	}
}

// TestLoadReadsTheRevisionFirst: Load keeps a value until the tenants'
// revision in the table rises, and a revision it cannot read is an error
// that loads nothing.
func TestLoadReadsTheRevisionFirst(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := revisionDB(t, dialect)
			c := revcache.New[int](8, time.Minute)
			loads := 0
			load := func(context.Context) (int, error) { loads++; return loads, nil }
			get := func() int {
				t.Helper()
				v, err := c.Load(ctx, db, table, []string{"a"}, "k", load)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if first, second := get(), get(); first != 1 || second != 1 {
				t.Fatalf("read twice at one revision: %d loads, want 1", loads)
			}
			if err := revcache.Bump(ctx, db, table, "a"); err != nil {
				t.Fatal(err)
			}
			if v := get(); v != 2 {
				t.Fatalf("after a bump: %d, want a new load", v)
			}
			if _, err := c.Load(ctx, db, "no_such_table", []string{"a"}, "k", load); err == nil || loads != 2 {
				t.Fatalf("an unreadable revision: err %v after %d loads, want an error and no load", err, loads)
			}
		})
	}
}

// TestReadEach: on both databases, each tenant's own revision, "0" for one
// never bumped, and a bump of one tenant changes its revision alone.
func TestReadEach(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := revisionDB(t, dialect)
			read := func(tenants ...string) map[string]string {
				t.Helper()
				revs, err := revcache.ReadEach(ctx, db, table, tenants)
				if err != nil {
					t.Fatal(err)
				}
				return revs
			}
			if got := read(); len(got) != 0 {
				t.Fatalf("no tenants: %v", got)
			}
			for range 2 {
				if err := revcache.Bump(ctx, db, table, "a"); err != nil {
					t.Fatal(err)
				}
			}
			if err := revcache.Bump(ctx, db, table, "b"); err != nil {
				t.Fatal(err)
			}
			got := read("a", "b", "c")
			if want := map[string]string{"a": "2", "b": "1", "c": "0"}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("revisions %v, want %v", got, want)
			}
			if err := revcache.Bump(ctx, db, table, "b"); err != nil {
				t.Fatal(err)
			}
			after := read("a", "b", "c")
			if after["a"] != got["a"] || after["c"] != got["c"] || after["b"] == got["b"] {
				t.Fatalf("after a bump of b: %v, before %v", after, got)
			}
		})
	}
}
