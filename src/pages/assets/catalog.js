// Client-side filter of the catalog list. The page is complete without it: every mod is in the
// HTML; this only hides the items that do not match. Filters live in the URL (?q=&tag=&build=).
const form = document.getElementById("filters");
const list = document.getElementById("mods");
const count = document.getElementById("count");

if (form && list && count && list.children.length > 0) {
  const q = form.elements.namedItem("q");
  const tag = form.elements.namedItem("tag");
  const build = form.elements.namedItem("build");
  const items = Array.from(list.children, (li) => ({
    li,
    text: li.textContent.toLowerCase(),
    tags: (li.dataset.tags || "").split(" "),
    builds: (li.dataset.builds || "").split(" "),
  }));
  const total = items.length;
  const params = new URLSearchParams(location.search);
  q.value = params.get("q") || "";
  for (const [select, value] of [
    [tag, params.get("tag")],
    [build, params.get("build")],
  ]) {
    if (value && Array.from(select.options).some((o) => o.value === value)) select.value = value;
  }

  const plural = (n) => `${n.toLocaleString("en")} ${n === 1 ? "mod" : "mods"}`;
  let scheduled = 0;

  const apply = () => {
    scheduled = 0;
    const terms = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    const wantTag = tag.value;
    const wantBuild = build.value;
    let shown = 0;
    for (const item of items) {
      const match =
        (!wantTag || item.tags.includes(wantTag)) &&
        (!wantBuild || item.builds.includes(wantBuild)) &&
        terms.every((t) => item.text.includes(t));
      if (item.li.hidden === match) item.li.hidden = !match;
      if (match) shown++;
    }
    count.textContent =
      shown === total
        ? `Showing all ${plural(total)}.`
        : shown === 0
          ? "No mod matches these filters."
          : `Showing ${plural(shown)} of ${total.toLocaleString("en")}.`;
    const next = new URLSearchParams();
    if (q.value) next.set("q", q.value);
    if (wantTag) next.set("tag", wantTag);
    if (wantBuild) next.set("build", wantBuild);
    const search = next.toString();
    history.replaceState(null, "", search ? `?${search}` : location.pathname);
  };
  const schedule = () => {
    if (!scheduled) scheduled = requestAnimationFrame(apply);
  };

  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    apply();
  });
  form.addEventListener("reset", () => setTimeout(apply));
  form.hidden = false;
  if (q.value || tag.value || build.value) apply();
}
