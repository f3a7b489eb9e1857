# The plugins of Steward's container image, whose binaries it keeps in
# /plugins. The repository's plugins.hcl documents every setting; the Helm
# chart's values.yaml (pluginsHcl) carries this same text by default.

plugin "resources" {
  binary           = "/plugins/resources"
  cloud_credential = true
  config {
    locations     = ["eastus", "westeurope"]
    required_tags = ["env", "owner", "cost-center"]
  }
  job "quotas" {
    schedule = "@every 1h"
  }
  job "inventory" {
    schedule = "@every 1h"
  }
}

plugin "cost" {
  binary           = "/plugins/cost"
  cloud_credential = true
  job "costs" {
    schedule = "@every 6h"
  }
}

plugin "identity" {
  binary           = "/plugins/identity"
  cloud_credential = true
  job "identity" {
    schedule = "@every 6h"
  }
}

plugin "compliance" {
  binary           = "/plugins/compliance"
  cloud_credential = true
  job "compliance" {
    schedule = "@every 4h"
  }
}

plugin "dmarc" {
  binary           = "/plugins/dmarc"
  cloud_credential = true
  config {
    dkim_selectors = ["selector1", "selector2"]
  }
  job "dmarc" {
    schedule = "@every 6h"
  }
  job "dmarc_reports" {
    schedule = "@every 15m"
  }
}

# The example catalogue is a demonstration: mount the partner's own and
# name it here.
plugin "partner" {
  binary = "/plugins/partner"
  config {
    catalogue_file = "/etc/steward/partner/catalogue.example.hcl"
  }
  job "partner" {
    schedule = "@every 6h"
  }
}
