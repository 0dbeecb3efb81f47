// The run viewer's episode page: the arrow keys step through the episode.
// Left follows the "previous" link (#prev), Right the "next" one (#next); keys typed into a field,
// or pressed with a modifier, are left alone.  Served from the blueprint's static folder: the
// page's Content-Security-Policy allows this one file by its path, and no inline script of ours.
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.defaultPrevented) {
    return;
  }
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
    return;
  }
  var id = event.key === "ArrowLeft" ? "prev" : event.key === "ArrowRight" ? "next" : null;
  var link = id && document.getElementById(id);
  if (link && link.href) {
    event.preventDefault();
    window.location.href = link.href;
  }
});
