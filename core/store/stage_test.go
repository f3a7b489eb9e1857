package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// TestStage: rows written in full and partial batches, or with COPY on
// PostgreSQL, all reach the stage with their values; a stage reopened on
// the same connection starts empty, and Drop removes it.
func TestStage(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		for _, useCopy := range []bool{false, true} {
			if useCopy && dialect != store.DialectPostgres {
				continue
			}
			t.Run(fmt.Sprintf("%s/copy=%t", dialect, useCopy), func(t *testing.T) {
				ctx := context.Background()
				db := storetest.Open(t, dialect)
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				open := func() *store.Stage {
					st, err := store.OpenStage(ctx, conn, "test_stage", "n INTEGER NOT NULL, label TEXT NOT NULL", []string{"n", "label"}, useCopy, 4)
					if err != nil {
						t.Fatal(err)
					}
					return st
				}
				st := open()
				row := func(i int) []any { return []any{i + 1, fmt.Sprintf("row %d", i+1)} }
				for _, n := range []int{10, 3} {
					if err := st.Write(ctx, n, row); err != nil {
						t.Fatal(err)
					}
				}
				var count, sum int
				var last string
				if err := conn.QueryRowContext(ctx, "SELECT COUNT(*), SUM(n), MAX(label) FROM test_stage").Scan(&count, &sum, &last); err != nil {
					t.Fatal(err)
				}
				if count != 13 || sum != 55+6 || last != "row 9" {
					t.Errorf("stage holds %d rows summing %d, last label %q; want 13, 61, row 9", count, sum, last)
				}
				st = open()
				if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM test_stage").Scan(&count); err != nil || count != 0 {
					t.Errorf("a reopened stage holds %d rows (%v)", count, err)
				}
				st.Drop()
				if _, err := conn.ExecContext(ctx, "SELECT 1 FROM test_stage"); err == nil {
					t.Error("the stage outlived Drop")
				}
			})
		}
	}
}
