/* Spaced repetition for the drills and the flashcards (loaded before mha-practice.js).
 *
 * A Leitner schedule: every item (one flashcard, or one kind of drill question) sits in a box, 1 to 5.
 * Answered right, it moves up one box and comes back after that box's interval (boxes 2 to 5: 1, 3,
 * 7 and 21 days; box 5 stays there); answered wrong, it goes back to box 1 and comes back in ten minutes. So what
 * you got wrong returns soon and often, what you know returns ever more rarely. Items never
 * answered are new: due now, after the ones due for review.
 *
 * The state lives in localStorage under "mha-schedule": {version: 1, decks: {deck: {id: item}}},
 * an item being {box, due (ms since 1970), right, wrong, last}. Export and import move it, with the
 * drills' and flashcards' tallies, as one JSON file. Every time comes from now(), which is Date.now():
 * a test replaces Date.now to move the clock.
 */
(function () {
  "use strict";
  const MINUTE = 60 * 1000;
  const DAY = 24 * 60 * MINUTE;
  const BOX_DAYS = [null, null, 1, 3, 7, 21]; // days until an item reaching box b (2 to 5) by a right answer is due
  const RELEARN = 10 * MINUTE; // wrong answer: back to box 1, due again this soon
  const MAX_BOX = 5;
  const KEY = "mha-schedule";
  const VERSION = 1;
  const FILE_FORMAT = "mha-practice-progress";
  // Every localStorage key a progress file carries: the schedule and the tallies of mha-practice.js.
  const STORAGE_KEYS = [KEY, "mha-drills-progress", "mha-flashcards-progress"];

  const now = () => Date.now();

  function emptyState() {
    return { version: VERSION, decks: {} };
  }

  // The new item after one answer (the old one is left as it was)
  function answered(item, correct, time) {
    const old = item || { box: 1, right: 0, wrong: 0 };
    const box = correct ? Math.min(old.box + 1, MAX_BOX) : 1;
    return {
      box,
      due: time + (correct ? BOX_DAYS[box] * DAY : RELEARN),
      right: old.right + (correct ? 1 : 0),
      wrong: old.wrong + (correct ? 0 : 1),
      last: time,
    };
  }

  function record(state, deck, id, correct, time) {
    const decks = { ...state.decks, [deck]: { ...(state.decks[deck] || {}) } };
    decks[deck][id] = answered(decks[deck][id], correct, time === undefined ? now() : time);
    return { ...state, decks };
  }

  function item(state, deck, id) {
    return (state.decks[deck] || {})[id] || null;
  }

  // Midnight after `time`, local time: "due today" means due before it.
  function endOfDay(time) {
    const day = new Date(time);
    day.setHours(24, 0, 0, 0);
    return day.getTime();
  }

  // The ids to ask, in order: reviews due by `time` (most overdue first, then the lower box), then new ids.
  function queue(state, deck, ids, time) {
    time = time === undefined ? now() : time;
    const reviews = ids.map((id) => [id, item(state, deck, id)]).filter(([, it]) => it && it.due <= time)
      .sort((a, b) => a[1].due - b[1].due || a[1].box - b[1].box).map(([id]) => id);
    return reviews.concat(ids.filter((id) => !item(state, deck, id)));
  }

  // The id to ask next: the first of the queue; with none due, the one due soonest.
  function next(state, deck, ids, time) {
    const due = queue(state, deck, ids, time);
    if (due.length) return due[0];
    return ids.slice().sort((a, b) => item(state, deck, a).due - item(state, deck, b).due)[0];
  }

  // {due: reviews due now, today: reviews due before midnight, fresh: never answered, known: in box 3 or above}
  function summary(state, deck, ids, time) {
    time = time === undefined ? now() : time;
    const items = ids.map((id) => item(state, deck, id));
    return {
      due: items.filter((it) => it && it.due <= time).length,
      today: items.filter((it) => it && it.due < endOfDay(time)).length,
      fresh: items.filter((it) => !it).length,
      known: items.filter((it) => it && it.box >= 3).length,
    };
  }

  // --- storage, export and import ------------------------------------------------------------------

  function isCount(n) {
    return Number.isInteger(n) && n >= 0;
  }

  // The schedule in `value` if it is one, else throws RangeError saying what is wrong.
  function checkState(value) {
    if (!value || typeof value !== "object" || value.version !== VERSION || typeof value.decks !== "object" || !value.decks) {
      throw new RangeError(`the schedule must be {version: ${VERSION}, decks: {...}}`);
    }
    for (const [deck, items] of Object.entries(value.decks)) {
      for (const [id, it] of Object.entries(items || {})) {
        const ok = it && Number.isInteger(it.box) && it.box >= 1 && it.box <= MAX_BOX && Number.isFinite(it.due)
          && isCount(it.right) && isCount(it.wrong) && Number.isFinite(it.last);
        if (!ok) throw new RangeError(`item ${deck}/${id} of the schedule is not {box 1-${MAX_BOX}, due, right, wrong, last}`);
      }
    }
    return value;
  }

  function load() {
    try {
      return checkState(JSON.parse(window.localStorage.getItem(KEY)));
    } catch (error) {
      return emptyState(); // nothing stored, storage switched off, or a damaged entry: start afresh
    }
  }

  function save(state) {
    try {
      window.localStorage.setItem(KEY, JSON.stringify(state));
    } catch (error) {
      /* storage switched off or full: the schedule lives as long as the page */
    }
  }

  function readKey(key) {
    try {
      return JSON.parse(window.localStorage.getItem(key));
    } catch (error) {
      return null;
    }
  }

  // The progress file's text: the schedule and the tallies, as stored.
  function exportText(time) {
    const storage = {};
    for (const key of STORAGE_KEYS) {
      const value = readKey(key);
      if (value !== null) storage[key] = value;
    }
    return JSON.stringify({ format: FILE_FORMAT, version: VERSION, exported: new Date(time === undefined ? now() : time).toISOString(),
                            storage }, null, 1);
  }

  // Check a progress file's text and store what it holds (replacing the progress kept here).
  function importText(text) {
    let data;
    try {
      data = JSON.parse(text);
    } catch (error) {
      throw new RangeError("that file is not JSON: choose a file saved with Export progress");
    }
    if (!data || data.format !== FILE_FORMAT || data.version !== VERSION || typeof data.storage !== "object" || !data.storage) {
      throw new RangeError(`that file is not a progress file of this site (format ${FILE_FORMAT}, version ${VERSION})`);
    }
    const storage = {};
    for (const key of STORAGE_KEYS) {
      const value = data.storage[key];
      if (value === undefined) continue;
      if (!value || typeof value !== "object" || Array.isArray(value)) throw new RangeError(`${key} in that file is not an object`);
      storage[key] = key === KEY ? checkState(value) : value;
    }
    for (const key of STORAGE_KEYS) {
      if (key in storage) window.localStorage.setItem(key, JSON.stringify(storage[key]));
      else window.localStorage.removeItem(key);
    }
    return storage;
  }

  window.MHA_SCHEDULE = {
    DAY, RELEARN, BOX_DAYS, KEY, STORAGE_KEYS, FILE_FORMAT,
    emptyState, answered, record, item, queue, next, summary, endOfDay, checkState, load, save, exportText, importText,
  };
})();
