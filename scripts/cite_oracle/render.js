#!/usr/bin/env node
// Independent citation oracle: citeproc-js with an official CSL style.
// Usage: node render.js <style.csl> <locales-dir> <items.json> [parent-style.csl]
// items.json is a JSON array of CSL-JSON items. Each item is rendered alone (a
// one-item bibliography) so that numbering and disambiguation never depend on the
// other records. Output: a JSON object {id: text} on stdout.
"use strict";
const fs = require("fs");
const path = require("path");
const CSL = require("citeproc");

function main(argv) {
  if (argv.length < 3) {
    process.stderr.write("usage: render.js STYLE LOCALES_DIR ITEMS_JSON [PARENT_STYLE]\n");
    process.exit(2);
  }
  let styleXml = fs.readFileSync(argv[0], "utf8");
  const localesDir = argv[1];
  const items = JSON.parse(fs.readFileSync(argv[2], "utf8"));
  if (argv[3]) {
    // A dependent style only names its parent; render with the parent's XML
    // but keep the dependent style's default locale when it declares one.
    const dependent = styleXml;
    styleXml = fs.readFileSync(argv[3], "utf8");
    const m = /default-locale="([^"]+)"/.exec(dependent);
    if (m && !/default-locale=/.test(styleXml)) {
      styleXml = styleXml.replace("<style ", `<style default-locale="${m[1]}" `);
    }
  }
  const out = {};
  for (const item of items) {
    const sys = {
      retrieveLocale(lang) {
        const p = path.join(localesDir, `locales-${lang}.xml`);
        return fs.existsSync(p) ? fs.readFileSync(p, "utf8") : false;
      },
      retrieveItem(id) {
        if (id !== item.id) throw new Error(`unknown item ${id}`);
        return item;
      },
    };
    const engine = new CSL.Engine(sys, styleXml);
    engine.setOutputFormat("text");
    engine.updateItems([item.id]);
    const [, entries] = engine.makeBibliography();
    out[item.id] = entries.map((e) => e.trim()).join("\n");
  }
  process.stdout.write(JSON.stringify(out, null, 2) + "\n");
}

main(process.argv.slice(2));
