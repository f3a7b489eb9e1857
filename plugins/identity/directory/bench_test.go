package directory_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/identity/directory"
)

// benchUsers is how many users BenchmarkIdentitySync syncs:
// $STEWARD_BENCH_USERS, or 50,000.
func benchUsers(b *testing.B) int {
	if v := os.Getenv("STEWARD_BENCH_USERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("STEWARD_BENCH_USERS=%q", v)
		}
		return n
	}
	return 50_000
}

// bulkWorld gives Contoso n users besides the fixture's: one in ten a
// guest, one in fifty privileged, seven in ten registered for MFA, one in
// twenty disabled, and last sign-ins spread over the past year with one in
// thirty never signed in.
func bulkWorld(n int) *world.World {
	w := identityWorld()
	on, off := true, false
	methods := [][]string{{"microsoftAuthenticator"}, {"fido2"}, {"microsoftAuthenticator", "phoneAuthentication"}}
	for i := range n {
		u := world.User{Email: fmt.Sprintf("user%06d@contoso.example", i), Name: fmt.Sprintf("User %06d", i), DirectoryTenantID: contosoDir,
			UserType: "Member", AccountEnabled: &on, IsPrivileged: i%50 == 0}
		if i%10 == 9 {
			u.Email, u.UserType = fmt.Sprintf("guest%06d@partner.example", i), "Guest"
		}
		if i%20 == 7 {
			u.AccountEnabled = &off
		}
		if i%10 < 7 {
			u.MFARegistered, u.MFAMethods = true, methods[i%len(methods)]
		}
		if i%30 != 0 {
			u.LastSignIn = simNow.AddDate(0, 0, -1-i%365).Format(time.DateOnly)
		}
		w.Users = append(w.Users, u)
	}
	return w
}

// median is the middle of the durations in milliseconds.
func median(took []time.Duration) float64 {
	slices.Sort(took)
	return float64(took[len(took)/2].Microseconds()) / 1000
}

// BenchmarkIdentitySync syncs a tenant of benchUsers users from the
// simulated Graph (users, MFA registration details, role members and
// managed devices, paged over HTTPS) into SQLite and PostgreSQL, in
// process, and reports users per second of the first sync (an empty store)
// and of a second (every row replaced), then the median time of the
// tenant's summary read through the plugin's route and of its identity
// page. Each read is served by a new Store, so that it times the SQL
// rather than the Store's revision cache.
func BenchmarkIdentitySync(b *testing.B) {
	n := benchUsers(b)
	w := bulkWorld(n)
	users := len(w.Users) - 3 // Fabrikam's three are synced too.
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			for range b.N {
				f := start(b, dialect, w, nil)
				began := time.Now()
				f.mustRun(b)
				first := time.Since(began)
				f.clock.Advance(10 * time.Minute)
				began = time.Now()
				f.mustRun(b)
				second := time.Since(began)
				b.ReportMetric(float64(users)/first.Seconds(), "users/s-first")
				b.ReportMetric(float64(users)/second.Seconds(), "users/s-second")

				var took []time.Duration
				for range 50 {
					f.handlers.Store = directory.NewStore(f.db)
					began = time.Now()
					resp := f.harness.Do(httptest.NewRequest(http.MethodGet, "/api/v1/identity/summary?tenant_ids="+contoso.ID, nil), admin)
					var sum []directory.TenantSummary
					err := json.NewDecoder(resp.Body).Decode(&sum)
					resp.Body.Close()
					took = append(took, time.Since(began))
					if err != nil || len(sum) != 1 || sum[0].TotalUsers != int64(users) {
						b.Fatalf("summary: %d %+v %v, want %d users", resp.StatusCode, sum, err, users)
					}
				}
				b.ReportMetric(median(took), "summary-ms")

				took = took[:0]
				for range 10 {
					f.handlers.Store = directory.NewStore(f.db)
					began = time.Now()
					resp := f.harness.Do(httptest.NewRequest(http.MethodGet, directory.PagePath+"?tenant_id="+contoso.ID, nil), admin)
					_, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					took = append(took, time.Since(began))
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Fatalf("page: %d %v", resp.StatusCode, err)
					}
				}
				b.ReportMetric(median(took), "page-ms")
			}
		})
	}
}
