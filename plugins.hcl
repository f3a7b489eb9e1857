# Plugins the host runs. Each block names a plugin binary (relative paths
# are resolved against this file's folder) and how to supervise it.
#
# plugin "name" {
#   binary        = "bin/plugins/name"
#   enabled       = true             # default true
#   sha256        = "…"              # optional: refuse a binary that differs
#   start_timeout = "10s"
#   data_plane    = "socket"         # "socket" (default) or "grpc"
#   max_response_bytes = 268435456   # cap on a response body (default 256 MiB)
#   request_timeout = "30s"          # past it a request answers 504
#   drain_timeout = "30s"            # a reload's wait for the old process's work
#   memory_limit  = "1GiB"           # resident memory past which it is restarted
#   cloud_credential = false         # true hands it the host's cloud credential
#   database_url  = "postgres://…"   # its own database instead of the one the host makes
#                                    # for it; refused when its role can read host tables
#   restart {
#     max_crashes     = 5            # give up after this many crashes…
#     window          = "5m"         # …within this window
#     backoff_initial = "200ms"
#     backoff_max     = "30s"
#   }
#   config { key = "value" }         # the plugin's settings, checked against its schema:
#                                    # an unknown or mistyped key stops the host, naming
#                                    # plugins.hcl:LINE,COL and the key
#   job "sync" {                     # override a job's…
#     schedule    = "@every 1h"      # …schedule
#     stale_after = "3h"             # …and how old its data may grow before a tenant is stale
#   }
# }

# Resources: quota usage and health; the inventory of every resource with
# its lifecycle (created, changed, deleted), orphans and tag coverage.
plugin "resources" {
  binary = "bin/plugins/resources"
  # It reads quotas and Resource Graph from the cloud, so it needs the
  # host's credential.
  cloud_credential = true
  config {
    locations = ["eastus", "westeurope"]
    # Tag keys every resource should carry (GET /api/v1/resources/tags/coverage).
    required_tags = ["env", "owner", "cost-center"]
  }
  job "quotas" {
    schedule = "@every 1h"
  }
  job "inventory" {
    schedule = "@every 1h"
  }
}

# Cost: daily actual costs, reservations and budgets, with anomalies and
# chargeback.
plugin "cost" {
  binary = "bin/plugins/cost"
  # It reads Cost Management, Consumption and Budgets, so it needs the
  # host's credential (and a billing reader role for reservations).
  cloud_credential = true
  config {
    # backfill_days = 365   # days a subscription's first sync fetches
    # restate_days  = 5     # recent days every later sync fetches again
    # anomaly_min_impact = { JPY = 150, INR = 80 }
    #                       # least rise flagged as an anomaly per currency,
    #                       # in its units; in a currency not listed, the
    #                       # reporting currency's at the latest rate
    # reporting_currency = "USD"
    #                       # multi-currency totals are converted into it
    # exchange_rates_url = "https://api.frankfurter.dev/v1"
    #                       # daily rates (Frankfurter format); or
    #                       # exchange_rates_file = "/etc/steward/rates.json";
    #                       # with neither, the simulated cloud's, else none
  }
  # Cost Management refreshes a day's costs a few times a day.
  job "costs" {
    schedule = "@every 6h"
  }
  # The ECB publishes its reference rates once a working day.
  job "exchange_rates" {
    schedule = "@every 6h"
  }
}

# Identity governance: users, guests, MFA registration, directory roles,
# managed devices and access reviews of each tenant's directory.
plugin "identity" {
  binary = "bin/plugins/identity"
  # It reads Microsoft Graph, so it needs the host's credential.
  cloud_credential = true
  job "identity" {
    schedule = "@every 6h"
  }
}

# Compliance: the latest policy states of every subscription, a daily
# snapshot per tenant for the trend, the compliance scores, and the
# regulatory frameworks with their coverage by the tenants' policies.
plugin "compliance" {
  binary = "bin/plugins/compliance"
  # It reads Policy Insights, so it needs the host's credential.
  cloud_credential = true
  config {
    # A folder of the deployment's own framework definitions (<id>.json,
    # format in plugins/compliance/policies/frameworks/README.md), loaded
    # beside the built-in ones; a relative path is from the host's working
    # directory. A file that does not load stops the plugin with an error
    # naming the file and the field.
    # frameworks_dir = "/etc/steward/frameworks"
  }
  # Azure evaluates policies about once a day and after changes; the host
  # counts compliance stale after five hours.
  job "compliance" {
    schedule = "@every 4h"
  }
}

# DMARC/DKIM: the mail-authentication posture of each tenant's domains —
# the directory's verified domains and those admins add — checked every
# few hours (DMARC, SPF, DKIM, MX), with scores, grades, history and an
# alert whenever a domain's posture weakens.
plugin "dmarc" {
  binary = "bin/plugins/dmarc"
  # It lists the tenants' domains from Microsoft Graph, so it needs the
  # host's credential.
  cloud_credential = true
  config {
    # DKIM selectors checked on every domain; each domain can add its own
    # (PUT /api/v1/dmarc/domains/{domain_id}/selectors).
    dkim_selectors = ["selector1", "selector2"]
    # resolver       = "10.0.0.53:53"   # default: the cloud settings' DNS server, else the system's
    # check_timeout  = "30s"            # longest one domain's check takes
    # concurrency    = 8                # domains checked at once
    # A folder of DMARC aggregate reports (XML, .xml.gz or .zip, as the
    # rua mailbox receives them) ingested every 15 minutes; each file is
    # read once, remembered by its SHA-256, so the folder may be
    # read-only. A report is filed under the tenant watching its domain.
    # reports_dir    = "/var/lib/steward/dmarc-reports"
    # Fetch each tenant's aggregate reports through Microsoft Graph from
    # its rua mailboxes (the rua addresses of its domains' DMARC records
    # at its own domains), every 15 minutes; needs Graph's Mail.Read
    # application permission. The simulated cloud's demo mailboxes hold
    # two days of reports.
    mailbox_sync = true
    # mailbox_folder = "inbox"          # a well-known folder name or a folder id
  }
  job "dmarc" {
    schedule = "@every 6h"
  }
  job "dmarc_reports" {
    schedule = "@every 15m"
  }
  # Fetches the mailboxes' reports and looks up every report source's
  # reverse name.
  job "dmarc_mailbox" {
    schedule = "@every 15m"
  }
}

# Partner requirements: a partner's security requirements for the tenants,
# with its deadline; each tenant's requirements checked against the identity
# and compliance plugins' figures, its maturity score and its gaps, and the
# evidence each tenant files for them (format and routes in
# plugins/partner/README.md). A catalogue that does not load stops the
# plugin with an error naming the file, the line and the field.
plugin "partner" {
  binary = "bin/plugins/partner"
  config {
    # An HCL catalogue; a relative path is from the host's working
    # directory. The programme and requirements may be written inline
    # here instead (programme = {…}, requirements = [{…}, …]). The example
    # is a demonstration: point this at the partner's own catalogue.
    catalogue_file = "plugins/partner/catalogue.example.hcl"
    # evidence_dir   = "/var/lib/steward/partner-evidence"  # default: evidence in the plugin's folder, plugins/partner, of the data directory
    # max_file_bytes = 5242880                              # largest evidence file; below STEWARD_MAX_BODY_BYTES
  }
  # The assessment reads the identity and compliance syncs' figures;
  # POST /api/v1/partner/sync runs it at once.
  job "partner" {
    schedule = "@every 6h"
  }
}

# The runtime test plugin proves the plugin protocol (crash, hang, noisy
# stdout, large bodies); the test suites run it. Enable it to explore the
# runtime by hand: its crash and hang routes need an admin.
plugin "testplugin" {
  binary  = "bin/plugins/testplugin"
  enabled = false
}
