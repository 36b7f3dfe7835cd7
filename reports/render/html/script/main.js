// Draws every section once the other modules are defined, and again on resize.

// ---------------------------------------------------------------- start

renderSummary();
renderJob();
renderTimeline();
renderStageTable();
readFlameHash();
renderFlameControls();
updateFlame();
renderRss();
renderLeaks();
renderGrowth();
renderSites();
document.getElementById('timeline-reset').addEventListener('click', () => zoomTimeline(0, runEnd));
if (data.device) document.getElementById('device-legend').hidden = false;
let resizeTimer = 0;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    renderTimeline();
    if (processes.length > 1) renderJobTimeline();
    renderFlame();
  }, 150);
});
document.body.setAttribute('data-rendered', 'true');
