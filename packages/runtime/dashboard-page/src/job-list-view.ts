/**
 * The job list (D2): filters (stage, type, topic, partition, id prefix), a
 * cursor page of jobs, paging, and the bulk actions on every job matching
 * the filter (D4, after a confirmation; not drawn on a read-only dashboard). The filter form is built once and
 * kept across polls, so typing in it is never interrupted; the table is
 * drawn again from each page.
 */
import { FILTER_STAGES, type JobFilter, type JobPage, type OverviewTopic, type Stage } from "./api-client.js";
import { formatIso, formatTime, shortId } from "./display-format.js";
import { h } from "./element.js";

export interface JobListActions {
  setFilter(filter: JobFilter): void;
  firstPage(): void;
  previousPage(): void;
  nextPage(): void;
  bulk(action: "retry" | "delete" | "cancel"): void;
}

/** Milliseconds of quiet typing before a text filter applies. */
const TYPING_DELAY_MS = 300;

export class JobListView {
  readonly root: HTMLElement;
  private readonly stage: HTMLSelectElement;
  private readonly type: HTMLInputElement;
  private readonly topic: HTMLSelectElement;
  private readonly partition: HTMLInputElement;
  private readonly q: HTMLInputElement;
  private readonly table: HTMLElement;
  private readonly pager: HTMLElement;
  private readonly bulkButtons: HTMLButtonElement[];
  /** Holds the bulk buttons when actions are allowed; empty on a read-only dashboard (nothing drawn until the overview says). */
  private readonly bulkSlot: HTMLElement;
  private typing: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly actions: JobListActions) {
    this.stage = h(
      "select",
      { attrs: { name: "stage", "aria-label": "Stage" } },
      h("option", { attrs: { value: "" } }, "every stage"),
      ...FILTER_STAGES.map((s) => h("option", { attrs: { value: s } }, s)),
    );
    this.type = h("input", { attrs: { name: "type", type: "text", placeholder: "job type", "aria-label": "Job type", autocomplete: "off" } });
    this.topic = h("select", { attrs: { name: "topic", "aria-label": "Topic" } });
    this.partition = h("input", { attrs: { name: "partition", type: "number", min: 0, placeholder: "partition", "aria-label": "Partition" } });
    this.q = h("input", { attrs: { name: "q", type: "search", placeholder: "id prefix", "aria-label": "Id prefix", autocomplete: "off" } });
    for (const select of [this.stage, this.topic]) select.addEventListener("change", () => this.apply());
    for (const input of [this.type, this.partition, this.q]) {
      input.addEventListener("input", () => this.applySoon());
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter") this.apply();
      });
    }
    const clear = h("button", { className: "link-button", attrs: { type: "button" }, onClick: () => actions.setFilter({}) }, "clear");
    this.bulkButtons = [
      h("button", { className: "action", attrs: { type: "button", "data-bulk": "retry" }, onClick: () => actions.bulk("retry") }, "Retry all matching"),
      h(
        "button",
        { className: "action danger", attrs: { type: "button", "data-bulk": "cancel" }, onClick: () => actions.bulk("cancel") },
        "Cancel all matching",
      ),
      h(
        "button",
        { className: "action danger", attrs: { type: "button", "data-bulk": "delete" }, onClick: () => actions.bulk("delete") },
        "Delete all matching",
      ),
    ];
    this.bulkSlot = h("span", { className: "bulk-actions" });
    this.table = h("div", { className: "job-table" });
    this.pager = h("div", { className: "pager" });
    this.root = h(
      "section",
      { className: "panel jobs" },
      h("h2", null, "Jobs"),
      h(
        "div",
        { className: "filters", attrs: { role: "search" } },
        this.stage,
        this.type,
        this.topic,
        this.partition,
        this.q,
        clear,
        h("span", { className: "spacer" }),
        this.bulkSlot,
      ),
      this.table,
      this.pager,
    );
  }

  /** Draws the bulk buttons, or none on a read-only dashboard. */
  showActions(readOnly: boolean): void {
    const drawn = this.bulkSlot.childElementCount > 0;
    if (readOnly && drawn) this.bulkSlot.replaceChildren();
    else if (!readOnly && !drawn) this.bulkSlot.replaceChildren(...this.bulkButtons);
  }

  /** Puts the filter in the form (after a click on a card or badge, or a link). */
  showFilter(filter: JobFilter, topics: readonly OverviewTopic[]): void {
    const jobTopics = topics.filter((t) => t.kind !== "log").map((t) => t.name);
    if (filter.topic && !jobTopics.includes(filter.topic)) jobTopics.push(filter.topic);
    const options = ["", ...jobTopics];
    const current = [...this.topic.options].map((o) => o.value);
    if (JSON.stringify(current) !== JSON.stringify(options)) {
      this.topic.replaceChildren(...options.map((name) => h("option", { attrs: { value: name } }, name === "" ? "every topic" : name)));
    }
    this.topic.value = filter.topic ?? "";
    this.stage.value = filter.stage ?? "";
    if (document.activeElement !== this.type) this.type.value = filter.type ?? "";
    if (document.activeElement !== this.partition) this.partition.value = filter.partition === undefined ? "" : String(filter.partition);
    if (document.activeElement !== this.q) this.q.value = filter.q ?? "";
    this.partition.disabled = !filter.topic;
    // No job topic: no topic or partition to filter by.
    this.topic.hidden = options.length === 1;
    this.partition.hidden = options.length === 1;
    // The API acts on every job matching stage and type only: with a narrower filter the action would take more than the list shows.
    const narrower = filter.topic !== undefined || filter.q !== undefined;
    for (const button of this.bulkButtons) {
      button.disabled = narrower;
      button.title = narrower
        ? "Acts on a stage and job type filter only: clear topic, partition and id prefix"
        : "Every job matching the stage and type filter";
    }
  }

  /** Draws a page; `pageIndex` 0 is the first. */
  showPage(page: JobPage, pageIndex: number, now: number): void {
    if (page.jobs.length === 0) {
      this.table.replaceChildren(h("p", { className: "note empty" }, pageIndex === 0 ? "No job matches." : "No more jobs."));
    } else {
      this.table.replaceChildren(
        h(
          "table",
          null,
          h("thead", null, h("tr", null, ...["id", "type", "stage", "attempt", "run at", "updated", "topic"].map((name) => h("th", null, name)))),
          h(
            "tbody",
            null,
            ...page.jobs.map((job) =>
              h(
                "tr",
                { attrs: { "data-job-id": job.id } },
                h("td", { className: "mono" }, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}`, title: job.id, className: "job-link" }, shortId(job.id))),
                h("td", { className: "job-type" }, job.jobType),
                h("td", null, stageTag(job.stage)),
                h("td", { className: "num" }, String(job.attempt)),
                h("td", { title: formatIso(job.runAt) }, formatTime(job.runAt, now)),
                h("td", { title: formatIso(job.updatedAt) }, formatTime(job.updatedAt, now)),
                h("td", null, job.topic ? `${job.topic} #${job.partition ?? "?"}` : ""),
              ),
            ),
          ),
        ),
      );
    }
    this.pager.replaceChildren(
      h("button", { attrs: { type: "button", "data-page": "first", disabled: pageIndex === 0 }, onClick: () => this.actions.firstPage() }, "« first"),
      h("button", { attrs: { type: "button", "data-page": "previous", disabled: pageIndex === 0 }, onClick: () => this.actions.previousPage() }, "‹ previous"),
      h("span", { className: "page-number" }, `page ${pageIndex + 1}`),
      h("button", { attrs: { type: "button", "data-page": "next", disabled: page.nextCursor === null }, onClick: () => this.actions.nextPage() }, "next ›"),
    );
  }

  /** The filter the form says now. */
  private readFilter(): JobFilter {
    const partition = this.partition.value.trim();
    const filter: JobFilter = {};
    if (this.stage.value) filter.stage = this.stage.value as Stage;
    if (this.type.value.trim()) filter.type = this.type.value.trim();
    if (this.topic.value) filter.topic = this.topic.value;
    if (filter.topic && /^\d+$/.test(partition)) filter.partition = Number(partition);
    if (this.q.value.trim()) filter.q = this.q.value.trim();
    return filter;
  }

  private apply(): void {
    if (this.typing !== null) clearTimeout(this.typing);
    this.typing = null;
    this.actions.setFilter(this.readFilter());
  }

  private applySoon(): void {
    if (this.typing !== null) clearTimeout(this.typing);
    this.typing = setTimeout(() => this.apply(), TYPING_DELAY_MS);
  }
}

/** A stage as a coloured tag. */
export function stageTag(stage: Stage): HTMLElement {
  return h("span", { className: `stage-tag stage-${stage}` }, stage);
}
