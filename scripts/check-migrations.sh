#!/usr/bin/env bash
# Fails when src/db/schema and drizzle/ disagree: drizzle-kit would generate a new migration.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(ls drizzle/*.sql | sort)
npx drizzle-kit generate --name schema_drift_check >/tmp/skyhook-drift.log 2>&1 || { cat /tmp/skyhook-drift.log; exit 1; }
after=$(ls drizzle/*.sql | sort)
if [ "$before" != "$after" ]; then
  echo "src/db/schema has changes without a migration. Run 'npm run db:generate' and commit drizzle/." >&2
  new=$(comm -13 <(echo "$before") <(echo "$after"))
  cat $new >&2
  # Leave the tree as it was: tracked files restored, everything drizzle-kit just generated removed.
  git checkout -- drizzle/meta 2>/dev/null || true
  rm -f $new
  git clean -fq -- drizzle 2>/dev/null || true
  exit 1
fi
echo "schema and migrations agree"
