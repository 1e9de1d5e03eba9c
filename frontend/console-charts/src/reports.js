// The reports page's charts. The page is whole without this script: every chart's numbers are in a
// real <table> with links to the chat list. The script draws each chart from the page's JSON
// (<script type="application/json" id="report-data">, no inline script: the console's CSP), adds the
// Chart / Table switch, and opens the chat list when a bar or a point is clicked.
//
// Only the Chart.js parts the page uses are registered, which keeps the bundle small.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip, Filler);

// Okabe-Ito: told apart by readers with any common colour-vision deficiency. Colour is never the only
// cue: bars carry a pattern per series and lines a dash and a point shape, which the legend repeats.
const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"];
const DASHES = [[], [6, 4], [2, 3], [10, 3, 2, 3], [1, 5], [12, 6]];
const POINTS = ["circle", "rect", "triangle", "rectRot", "crossRot", "star"];

function pattern(index, colour) {
  const size = 10;
  const tile = document.createElement("canvas");
  tile.width = size;
  tile.height = size;
  const g = tile.getContext("2d");
  g.fillStyle = colour;
  g.fillRect(0, 0, size, size);
  g.strokeStyle = "rgba(255,255,255,0.85)";
  g.fillStyle = "rgba(255,255,255,0.85)";
  g.lineWidth = 2;
  const line = (x1, y1, x2, y2) => {
    g.beginPath();
    g.moveTo(x1, y1);
    g.lineTo(x2, y2);
    g.stroke();
  };
  switch (index % 7) {
    case 1: // diagonal stripes
      line(0, size, size, 0);
      line(-size / 2, size / 2, size / 2, -size / 2);
      line(size / 2, size * 1.5, size * 1.5, size / 2);
      break;
    case 2: // dots
      g.beginPath();
      g.arc(size / 2, size / 2, 2, 0, 2 * Math.PI);
      g.fill();
      break;
    case 3: // horizontal lines
      line(0, size / 2, size, size / 2);
      break;
    case 4: // cross-hatch
      line(0, 0, size, size);
      line(0, size, size, 0);
      break;
    case 5: // vertical lines
      line(size / 2, 0, size / 2, size);
      break;
    case 6: // reverse diagonal
      line(0, 0, size, size);
      break;
    default: // solid: the first series
  }
  return g.createPattern(tile, "repeat");
}

function cssVar(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

function datasetsFor(spec) {
  return spec.datasets.map((series, i) => {
    const colour = PALETTE[(series.colour ?? i) % PALETTE.length];
    if (spec.type === "line") {
      return {
        label: series.label,
        data: series.data,
        borderColor: colour,
        backgroundColor: colour,
        borderDash: DASHES[i % DASHES.length],
        pointStyle: POINTS[i % POINTS.length],
        pointRadius: 4,
        pointHoverRadius: 6,
        borderWidth: 2,
        spanGaps: false,
        links: series.links || null,
      };
    }
    // `colours`: one palette index per bar (the bars of one series are different things, such as
    // met and breached); each keeps its own pattern too.
    const perBar = series.colours;
    return {
      label: series.label,
      data: series.data,
      backgroundColor: perBar ? perBar.map((c) => pattern(c, PALETTE[c % PALETTE.length])) : pattern(series.colour ?? i, colour),
      borderColor: perBar ? perBar.map((c) => PALETTE[c % PALETTE.length]) : colour,
      borderWidth: 1,
      links: series.links || null,
    };
  });
}

function draw(canvas, spec, page) {
  const text = cssVar("--color-text", "#1a1a1a");
  const muted = cssVar("--color-muted", "#555");
  const grid = cssVar("--color-border", "#ddd");
  const numbers = new Intl.NumberFormat(page.lang);
  const format = (value) => (value === null || value === undefined ? page.none : `${numbers.format(value)}${spec.unit ? ` ${spec.unit}` : ""}`);
  const horizontal = Boolean(spec.horizontal);
  const valueAxis = horizontal ? "x" : "y";
  const categoryAxis = horizontal ? "y" : "x";
  const chart = new Chart(canvas, {
    type: spec.type,
    data: { labels: spec.labels, datasets: datasetsFor(spec) },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      indexAxis: horizontal ? "y" : "x",
      locale: page.lang,
      color: text,
      interaction: { mode: "nearest", intersect: spec.type === "bar", axis: categoryAxis },
      plugins: {
        legend: {
          display: spec.datasets.length > 1,
          rtl: page.rtl,
          textDirection: page.rtl ? "rtl" : "ltr",
          labels: { color: text, usePointStyle: spec.type === "line", boxWidth: 24, boxHeight: 14 },
        },
        tooltip: {
          rtl: page.rtl,
          textDirection: page.rtl ? "rtl" : "ltr",
          callbacks: { label: (item) => `${item.dataset.label}: ${format(item.raw)}` },
        },
      },
      scales: {
        [categoryAxis]: {
          stacked: Boolean(spec.stacked),
          // Days run the way the page reads: right to left in Arabic.
          reverse: page.rtl && !horizontal,
          position: horizontal ? (page.rtl ? "right" : "left") : "bottom",
          ticks: { color: muted, autoSkip: true, maxRotation: 0 },
          grid: { display: false },
        },
        [valueAxis]: {
          stacked: Boolean(spec.stacked),
          beginAtZero: true,
          position: horizontal ? "bottom" : page.rtl ? "right" : "left",
          reverse: page.rtl && horizontal,
          title: { display: Boolean(spec.axis), text: spec.axis || "", color: muted },
          ticks: { color: muted, precision: spec.unit ? undefined : 0, callback: (value) => numbers.format(value) },
          grid: { color: grid },
        },
      },
      onHover(event, elements) {
        const link = elements.length && linkOf(chart, elements[0]);
        event.native.target.style.cursor = link ? "pointer" : "default";
      },
      onClick(event, elements) {
        const link = elements.length && linkOf(chart, elements[0]);
        if (link) window.location.assign(link);
      },
    },
  });
  return chart;
}

function linkOf(chart, element) {
  const links = chart.data.datasets[element.datasetIndex].links;
  return links ? links[element.index] : null;
}

function switcher(section, name) {
  const buttons = section.querySelectorAll("[data-view]");
  const chartBox = section.querySelector("[data-part=chart]");
  const tableBox = section.querySelector("[data-part=table]");
  const show = (view) => {
    chartBox.hidden = view !== "chart";
    tableBox.hidden = view !== "table";
    buttons.forEach((button) => button.setAttribute("aria-pressed", String(button.dataset.view === view)));
    try {
      sessionStorage.setItem(`report-view-${name}`, view);
    } catch (_) {
      // Storage refused (private mode): the choice lasts for this page only.
    }
  };
  buttons.forEach((button) => {
    button.hidden = false;
    button.addEventListener("click", () => show(button.dataset.view));
  });
  let saved = null;
  try {
    saved = sessionStorage.getItem(`report-view-${name}`);
  } catch (_) {
    saved = null;
  }
  show(saved === "table" ? "table" : "chart");
}

function start() {
  const source = document.getElementById("report-data");
  if (!source) return;
  const page = JSON.parse(source.textContent);
  page.rtl = document.documentElement.dir === "rtl";
  page.lang = document.documentElement.lang || "en";
  document.querySelectorAll("[data-chart]").forEach((section) => {
    const name = section.dataset.chart;
    const spec = page.charts[name];
    const canvas = section.querySelector("canvas");
    if (!spec || !canvas) return;
    section.querySelector("[data-part=switch]").hidden = false;
    switcher(section, name);
    draw(canvas, spec, page);
  });
  // The custom range's fields matter only when "Custom" is chosen.
  const preset = document.getElementById("report-range");
  const custom = document.getElementById("report-custom");
  if (preset && custom) {
    const sync = () => {
      custom.hidden = preset.value !== "custom";
    };
    preset.addEventListener("change", sync);
    sync();
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
