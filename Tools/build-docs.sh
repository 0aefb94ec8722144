#!/usr/bin/env bash
# RingIO — the DocC documentation of every library module, as a static site to open in a browser.
#
#   Tools/build-docs.sh     a site per module in .build-docs/site/<module>/, and
#                           .build-docs/site/index.html linking them; any DocC warning fails
#   python3 -m http.server -d .build-docs/site 8000     then open http://127.0.0.1:8000/
#
# The symbol graphs come from the debug build (.build): after `swift test --traits ServiceLifecycle`
# nothing is built again (RingIOServiceLifecycle is empty without its trait).
# CI builds the same archives with warnings as errors (.ci/run, "documentation").
set -euo pipefail
cd "$(dirname "$0")/.."

modules=(ByteRopes ByteRopesFoundationCompat RingIO RingHTTP RingIOServiceLifecycle RingTLS)
site=.build-docs/site
rm -rf "$site"
mkdir -p "$site"
for module in "${modules[@]}"; do
    swift package --traits ServiceLifecycle --allow-writing-to-directory "$site" \
        generate-documentation --target "$module" --warnings-as-errors \
        --transform-for-static-hosting --hosting-base-path "$module" \
        --output-path "$site/$module"
done
{
    echo '<!doctype html><meta charset="utf-8"><title>RingIO documentation</title>'
    echo '<h1>RingIO documentation</h1><ul>'
    for module in "${modules[@]}"; do
        lower=$(echo "$module" | tr '[:upper:]' '[:lower:]')
        printf '<li><a href="%s/documentation/%s/index.html">%s</a></li>\n' "$module" "$lower" "$module"
    done
    echo '</ul>'
    echo '<p>Serve this directory over HTTP (for example <code>python3 -m http.server -d .build-docs/site</code>)'
    echo 'and open it: DocC pages load their content with JavaScript, which browsers refuse from file:// URLs.</p>'
} >"$site/index.html"
echo "the site: $site/index.html (serve it: python3 -m http.server -d $site 8000)"
