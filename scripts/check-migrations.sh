#!/usr/bin/env bash
# Fails when src/db/schema and drizzle/ disagree: drizzle-kit would generate a new migration.
set -euo pipefail
cd "$(dirname "$0")/.."
meta_before=$(mktemp -d)
trap 'rm -rf "$meta_before"' EXIT
cp -R drizzle/meta/. "$meta_before"/
before=$(ls drizzle/*.sql | sort)
npx drizzle-kit generate --name schema_drift_check >/tmp/skyhook-drift.log 2>&1 || { cat /tmp/skyhook-drift.log; exit 1; }
after=$(ls drizzle/*.sql | sort)
if [ "$before" != "$after" ]; then
  echo "src/db/schema has changes without a migration. Run 'npm run db:generate' and commit drizzle/." >&2
  new=$(comm -13 <(echo "$before") <(echo "$after"))
  cat $new >&2
  # Leave the tree as it was before the check (uncommitted migrations included): only what drizzle-kit
  # just wrote is removed, and the journal it extended is put back.
  rm -f $new
  for f in drizzle/meta/*; do [ -e "$meta_before/$(basename "$f")" ] || rm -f "$f"; done
  cp -R "$meta_before"/. drizzle/meta/
  exit 1
fi
echo "schema and migrations agree"
