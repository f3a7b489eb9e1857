package reports

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// benchReport is a gzipped report of n records from as many sources,
// one in ten failing DMARC, under its own report id.
func benchReport(b *testing.B, id, n int) []byte {
	var doc strings.Builder
	fmt.Fprintf(&doc, `<?xml version="1.0"?><feedback><report_metadata><org_name>google.com</org_name><email>noreply-dmarc-support@google.com</email>`+
		`<report_id>bench-%d</report_id><date_range><begin>1795132800</begin><end>1795219199</end></date_range></report_metadata>`+
		`<policy_published><domain>contoso-retail.example</domain><adkim>r</adkim><aspf>r</aspf><p>reject</p><sp>reject</sp><pct>100</pct></policy_published>`, id)
	for i := range n {
		result := "pass"
		if i%10 == 0 {
			result = "fail"
		}
		fmt.Fprintf(&doc, `<record><row><source_ip>10.%d.%d.%d</source_ip><count>%d</count><policy_evaluated><disposition>none</disposition>`+
			`<dkim>%s</dkim><spf>%s</spf></policy_evaluated></row><identifiers><header_from>contoso-retail.example</header_from></identifiers>`+
			`<auth_results><dkim><domain>contoso-retail.example</domain><result>%s</result><selector>selector1</selector></dkim>`+
			`<spf><domain>contoso-retail.example</domain><result>%s</result></spf></auth_results></record>`,
			i>>16&255, i>>8&255, i&255, i%50+1, result, result, result, result)
	}
	doc.WriteString("</feedback>")
	return gz(b, []byte(doc.String()))
}

// BenchmarkReportIngest parses and stores reports of 5,000 records, each
// a new report, and reports records stored a second.
func BenchmarkReportIngest(b *testing.B) {
	const records = 5000
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			db := storetest.Open(b, dialect)
			ctx := context.Background()
			if _, err := store.Migrate(ctx, db, Migrations(), "plugin_dmarc_migrations"); err != nil {
				b.Fatal(err)
			}
			st := &Store{DB: db}
			files := make([][]byte, b.N)
			for i := range files {
				files[i] = benchReport(b, i, records)
			}
			b.ResetTimer()
			for i := range b.N {
				rep, err := Parse(bytes.NewReader(files[i]), Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if _, dup, err := st.Insert(ctx, rep, Meta{TenantID: tenantContoso, Source: SourceUpload, ReceivedAt: time.Now()}); err != nil || dup {
					b.Fatalf("insert: duplicate %v, %v", dup, err)
				}
			}
			b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
